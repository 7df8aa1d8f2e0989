// The oracle of kctl's `mirror translate`: Kafka's own RemoteClusterUtils.translateOffsets
// (connect-mirror-client 4.3.1) for the groups named, or with --pattern REGEX the Pattern
// overload of KIP-1239. Prints one JSON line per translated partition:
//   {"group": G, "topic": T, "partition": P, "offset": O}
// Usage: MirrorTranslate BOOTSTRAP REMOTE_ALIAS default|identity (GROUP... | --pattern REGEX)

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class MirrorTranslate {
    public static void main(String[] args) throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        if (args[2].equals("identity")) {
            props.put("replication.policy.class", "org.apache.kafka.connect.mirror.IdentityReplicationPolicy");
        }
        String alias = args[1];
        Duration timeout = Duration.ofSeconds(30);
        Map<String, Map<TopicPartition, OffsetAndMetadata>> all = new HashMap<>();
        if (args.length > 4 && args[3].equals("--pattern")) {
            all = RemoteClusterUtils.translateOffsets(props, alias, Pattern.compile(args[4]), timeout);
        } else {
            for (int i = 3; i < args.length; i++) {
                all.put(args[i], RemoteClusterUtils.translateOffsets(props, alias, args[i], timeout));
            }
        }
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, Map<TopicPartition, OffsetAndMetadata>> group : all.entrySet()) {
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : group.getValue().entrySet()) {
                out.append("{\"group\": \"").append(group.getKey()).append("\", \"topic\": \"")
                   .append(e.getKey().topic()).append("\", \"partition\": ").append(e.getKey().partition())
                   .append(", \"offset\": ").append(e.getValue().offset()).append("}\n");
            }
        }
        System.out.print(out);
    }
}
