// What `kafka-reassign-partitions --generate` proposes for a layout, computed offline with
// the placer the tool calls (Kafka 4.x: StripedReplicaPlacer over the brokers listed, with
// their racks), so bench_balance.py can weigh it at sizes no test cluster holds.
//
// stdin:  "broker ID RACK" (RACK "-" for none) and "topic NAME PARTITIONS REPLICATION" lines
// stdout: "NAME PARTITION B1,B2,..." per partition
// args:   the random seed (the tool uses an unseeded Random: each run proposes another plan)
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.StringJoiner;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;

public class GenerateOracle {
    public static void main(String[] args) throws Exception {
        List<UsableBroker> brokers = new ArrayList<>();
        List<String[]> topics = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] f = line.trim().split(" ");
            if (f[0].equals("broker")) {
                brokers.add(new UsableBroker(Integer.parseInt(f[1]), f[2].equals("-") ? Optional.empty() : Optional.of(f[2]), false));
            } else if (f[0].equals("topic")) {
                topics.add(f);
            }
        }
        ClusterDescriber cluster = new ClusterDescriber() {
            public Iterator<UsableBroker> usableBrokers() { return brokers.iterator(); }
            public Uuid defaultDir(int brokerId) { return Uuid.ZERO_UUID; }
        };
        StripedReplicaPlacer placer = new StripedReplicaPlacer(new Random(Long.parseLong(args[0])));
        StringBuilder out = new StringBuilder();
        for (String[] t : topics) {
            TopicAssignment placed = placer.place(new PlacementSpec(0, Integer.parseInt(t[2]), Short.parseShort(t[3])), cluster);
            int p = 0;
            for (PartitionAssignment a : placed.assignments()) {
                StringJoiner replicas = new StringJoiner(",");
                for (int b : a.replicas()) replicas.add(Integer.toString(b));
                out.append(t[1]).append(' ').append(p++).append(' ').append(replicas).append('\n');
            }
        }
        System.out.print(out);
    }
}
