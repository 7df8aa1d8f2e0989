// Prints what kctl's tables in kctl/admin/cluster/features.py must match, from the Kafka jars the
// tests run (java -cp KAFKA_JARS tests/backends/FeatureLevels.java):
//   mv LEVEL NAME                 every production MetadataVersion
//   release X.Y FEATURE=LEVEL...  each release's last MetadataVersion and every production
//                                 feature's default level for it (kafka-features
//                                 version-mapping --release-version X.Y)
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;

public class FeatureLevels {
    public static void main(String[] args) {
        Map<String, MetadataVersion> lastOfRelease = new LinkedHashMap<>();
        for (MetadataVersion version : MetadataVersion.values()) {
            if (!version.isProduction()) continue;
            System.out.println("mv " + version.featureLevel() + " " + version.version());
            String[] parts = version.version().split("[.-]");
            lastOfRelease.put(parts[0] + "." + parts[1], version);
        }
        for (Map.Entry<String, MetadataVersion> entry : lastOfRelease.entrySet()) {
            StringBuilder line = new StringBuilder("release " + entry.getKey() + " metadata.version=" + entry.getValue().featureLevel());
            for (Feature feature : Feature.PRODUCTION_FEATURES) {
                line.append(" ").append(feature.featureName()).append("=").append(feature.defaultLevel(entry.getValue()));
            }
            System.out.println(line);
        }
    }
}
