// ARX 3.9.2 with a user-defined value order (issue 44 item 6, ADR 0044): the one option the
// shared harness (../shared/arx/harness/ArxRun.java) lacks. The sensitive attribute's data type
// is DataType.createOrderedString(values) (one value a line of ORDER_FILE, UTF-8), judged by
// OrderedDistanceTCloseness(attribute, t) together with KAnonymity(k); every other column not a
// QID insensitive; ARX's DM*, the optimal search (FLASH, no heuristic), the suppression limit as
// a fraction of rows. One JSON object on stdout: node (levels in --qid order), suppressed records
// and classes of the output (also as `arx_class_statistics`, as ArxRun writes them), ARX's DM*,
// and the CPU of ARXAnonymizer.anonymize's thread (`cpu_anonymize_main_thread_s`, as ArxRun
// measures it) for `make bench-arx` (row adult-tordered-explicit-5).
//
//   java -cp "../shared/arx/lib/*:DIR" ArxOrderedString --input data.csv --sep ';' \
//        --qid a=h_a.csv ... --sensitive s --order order.txt --t 0.2 --k 2 --suppression 0.1
//   (or benchmarks/arx_ordered/arx-ordered with the same arguments: compiled once, cached)
import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.DataType;
import org.deidentifier.arx.aggregates.StatisticsEquivalenceClasses;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.OrderedDistanceTCloseness;
import org.deidentifier.arx.metric.Metric;

public class ArxOrderedString {
    public static void main(String[] args) throws Exception {
        Map<String, String> qids = new LinkedHashMap<>();
        Map<String, String> opt = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (args[i].equals("--qid")) {
                String[] kv = args[i + 1].split("=", 2);
                qids.put(kv[0], kv[1]);
            } else {
                opt.put(args[i], args[i + 1]);
            }
        }
        char sep = opt.get("--sep").charAt(0);
        Data data = Data.create(new File(opt.get("--input")), StandardCharsets.UTF_8, sep);
        for (Map.Entry<String, String> e : qids.entrySet()) {
            Hierarchy h = Hierarchy.create(new File(e.getValue()), StandardCharsets.UTF_8, sep);
            data.getDefinition().setAttributeType(e.getKey(), h);
        }
        String attribute = opt.get("--sensitive");
        DataHandle in = data.getHandle();
        for (int c = 0; c < in.getNumColumns(); c++) {
            String name = in.getAttributeName(c);
            if (!qids.containsKey(name) && !name.equals(attribute)) {
                data.getDefinition().setAttributeType(name, AttributeType.INSENSITIVE_ATTRIBUTE);
            }
        }
        List<String> order = Files.readAllLines(new File(opt.get("--order")).toPath(), StandardCharsets.UTF_8);
        data.getDefinition().setAttributeType(attribute, AttributeType.SENSITIVE_ATTRIBUTE);
        data.getDefinition().setDataType(attribute, DataType.createOrderedString(order));
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new KAnonymity(Integer.parseInt(opt.get("--k"))));
        config.addPrivacyModel(new OrderedDistanceTCloseness(attribute, Double.parseDouble(opt.get("--t"))));
        config.setSuppressionLimit(Double.parseDouble(opt.get("--suppression")));
        config.setQualityModel(Metric.createDiscernabilityMetric(true));
        config.setAlgorithm(ARXConfiguration.AnonymizationAlgorithm.OPTIMAL);
        config.setHeuristicSearchThreshold(Integer.MAX_VALUE);

        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long c0 = threads.getCurrentThreadCpuTime(), w0 = System.nanoTime();
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        double cpu = (threads.getCurrentThreadCpuTime() - c0) / 1e9, wall = (System.nanoTime() - w0) / 1e9;

        ARXNode optimum = result.getGlobalOptimum();
        int[] levels = optimum.getTransformation();
        String[] names = optimum.getQuasiIdentifyingAttributes();
        StringBuilder node = new StringBuilder("{");
        List<String> qidNames = new ArrayList<>(qids.keySet());
        for (int q = 0; q < qidNames.size(); q++) {
            for (int i = 0; i < names.length; i++) {
                if (names[i].equals(qidNames.get(q))) {
                    node.append(q > 0 ? ", " : "").append('"').append(names[i]).append("\": ").append(levels[i]);
                }
            }
        }
        node.append('}');
        StatisticsEquivalenceClasses st = result.getOutput(optimum, false).getStatistics().getEquivalenceClassStatistics();
        String stats = "\"suppressed_records\": " + st.getNumberOfSuppressedRecords()
                       + ", \"equivalence_classes\": " + st.getNumberOfEquivalenceClasses();
        double processCpu = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime() / 1e9;
        System.out.println("{\"arx_data_type\": \"" + data.getDefinition().getDataType(attribute) + "\", \"node\": " + node
                           + ", " + stats
                           + ", \"arx_class_statistics\": {" + stats + "}"
                           + ", \"arx_information_loss_value\": " + optimum.getHighestScore().getValue()
                           + ", \"transformations_checked\": " + result.getProcessStatistics().getTransformationsChecked()
                           + ", \"cpu_anonymize_main_thread_s\": " + cpu
                           + ", \"time_anonymize_s\": " + wall
                           + ", \"process_cpu_s\": " + processCpu + "}");
    }
}
