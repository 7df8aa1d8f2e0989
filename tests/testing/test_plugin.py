"""kctl.testing, used the way a user's own suite would: through pytester."""

pytest_plugins = ["pytester"]


def test_user_suite_gets_a_working_broker(pytester):
    pytester.makeconftest('pytest_plugins = ["kctl.testing"]\n')
    pytester.makepyfile(
        """
        from confluent_kafka import Consumer, Producer

        def test_round_trip(kafka_bootstrap):
            producer = Producer({"bootstrap.servers": kafka_bootstrap})
            producer.produce("orders", b"order-1")
            assert producer.flush(10) == 0
            consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "g",
                                 "auto.offset.reset": "earliest"})
            consumer.subscribe(["orders"])
            message = None
            for _ in range(20):
                message = consumer.poll(0.5)
                if message is not None and not message.error():
                    break
            consumer.close()
            assert message.value() == b"order-1"

        def test_restart_keeps_data(kafka_broker):
            kafka_broker.restart()
            assert kafka_broker.bootstrap
        """
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_user_suite_gets_a_secured_broker(pytester):
    pytester.makeconftest('pytest_plugins = ["kctl.testing"]\n')
    pytester.makepyfile(
        """
        import pytest
        from confluent_kafka import KafkaError, Producer

        def test_admin_writes_and_user_is_denied(kafka_secured):
            assert kafka_secured.client_config()["security.protocol"] == "SASL_SSL"
            producer = Producer(kafka_secured.client_config("admin"))
            producer.produce("secured", b"x")
            assert producer.flush(10) == 0
            reports = []
            producer = Producer({**kafka_secured.client_config("user", "PLAIN"), "enable.idempotence": False,
                                 "message.timeout.ms": 5000})
            producer.produce("secured", b"y", on_delivery=lambda err, msg: reports.append(err))
            producer.flush(10)
            assert reports[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        """
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
