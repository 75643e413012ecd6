/*
 * ARX 3.9.2's game-theoretic models, run through its public API only, for the product's tests and
 * `make bench-arx` (ADR 0046): ProfitabilityProsecutor / ProfitabilityJournalist and their
 * NoAttack variants, with an ARXCostBenefitConfiguration, and ARX's publisher-payout quality model
 * (Metric.createPublisherPayoutMetric) or another objective. ARX's globally optimal search (FLASH,
 * heuristic threshold Integer.MAX_VALUE). Prints one JSON object. The harness of
 * ../shared/arx/arx has no option for these models; this one calls the same jars.
 *
 *   arx-profitability --input adult.csv --sep ';' --qid age=h_age.csv ... \
 *     --model prosecutor|journalist|prosecutor-noattack|journalist-noattack [--subset mod:N:R|FILE] \
 *     [--benefit B] [--loss L] [--gain G] [--cost C] [--suppression F] \
 *     [--metric payout-prosecutor|payout-journalist|loss|entropy-based|dmstar] [--gs-factor F] [--k K]
 */
import java.io.File;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.*;

import org.deidentifier.arx.*;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.criteria.*;
import org.deidentifier.arx.metric.Metric;
import org.deidentifier.arx.metric.v2.QualityMetadata;
import org.deidentifier.arx.aggregates.StatisticsEquivalenceClasses;

public class ArxProfitability {

    static String arg(Map<String, String> o, String k, String d) { return o.getOrDefault(k, d); }

    static String q(String s) { return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""; }

    static String num(double x) {
        return Double.isNaN(x) || Double.isInfinite(x) ? "null" : Double.toString(x);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        LinkedHashMap<String, String> qids = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (args[i].equals("--qid")) {
                String[] p = args[i + 1].split("=", 2);
                qids.put(p[0], p[1]);
            } else {
                o.put(args[i], args[i + 1]);
            }
        }
        char sep = arg(o, "--sep", ",").charAt(0);
        Data data = Data.create(o.get("--input"), StandardCharsets.UTF_8, sep);
        for (Map.Entry<String, String> e : qids.entrySet()) {
            data.getDefinition().setAttributeType(e.getKey(), Hierarchy.create(new File(e.getValue()), StandardCharsets.UTF_8, sep));
        }
        DataHandle in = data.getHandle();
        int rows = in.getNumRows();
        for (int c = 0; c < in.getNumColumns(); c++) {
            String name = in.getAttributeName(c);
            if (!qids.containsKey(name)) data.getDefinition().setAttributeType(name, AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        DataSubset subset = null;
        if (o.containsKey("--subset")) {
            Set<Integer> set = new TreeSet<>();
            String spec = o.get("--subset");
            if (spec.startsWith("mod:")) {
                String[] p = spec.split(":");
                int n = Integer.parseInt(p[1]), r = Integer.parseInt(p[2]);
                for (int i = 0; i < rows; i++) if (i % n == r) set.add(i);
            } else {
                for (String line : Files.readAllLines(Paths.get(spec))) if (!line.trim().isEmpty()) set.add(Integer.parseInt(line.trim()));
            }
            subset = DataSubset.create(data, set);
        }
        ARXCostBenefitConfiguration cb = ARXCostBenefitConfiguration.create();
        if (o.containsKey("--benefit")) cb.setPublisherBenefit(Double.parseDouble(o.get("--benefit")));
        if (o.containsKey("--loss")) cb.setPublisherLoss(Double.parseDouble(o.get("--loss")));
        if (o.containsKey("--gain")) cb.setAdversaryGain(Double.parseDouble(o.get("--gain")));
        if (o.containsKey("--cost")) cb.setAdversaryCost(Double.parseDouble(o.get("--cost")));

        String model = arg(o, "--model", "prosecutor");
        PrivacyCriterion pc;
        switch (model) {
            case "prosecutor": pc = new ProfitabilityProsecutor(); break;
            case "journalist": pc = new ProfitabilityJournalist(subset); break;
            case "prosecutor-noattack": pc = new ProfitabilityProsecutorNoAttack(); break;
            case "journalist-noattack": pc = new ProfitabilityJournalistNoAttack(subset); break;
            default: throw new IllegalArgumentException("unknown --model " + model);
        }
        double gs = Double.parseDouble(arg(o, "--gs-factor", "0.5"));
        String metricName = arg(o, "--metric", "payout-prosecutor");
        Metric<?> metric;
        switch (metricName) {
            case "payout-prosecutor": metric = Metric.createPublisherPayoutMetric(false, gs); break;
            case "payout-journalist": metric = Metric.createPublisherPayoutMetric(true, gs); break;
            case "loss": metric = Metric.createLossMetric(gs); break;
            case "entropy-based": metric = Metric.createEntropyBasedInformationLossMetric(gs); break;
            case "dmstar": metric = Metric.createDiscernabilityMetric(true); break;
            default: throw new IllegalArgumentException("unknown --metric " + metricName);
        }
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(pc);
        if (o.containsKey("--k")) config.addPrivacyModel(new KAnonymity(Integer.parseInt(o.get("--k"))));
        config.setCostBenefitConfiguration(cb);
        config.setSuppressionLimit(Double.parseDouble(arg(o, "--suppression", "0")));
        config.setQualityModel(metric);
        config.setAlgorithm(ARXConfiguration.AnonymizationAlgorithm.OPTIMAL);
        config.setHeuristicSearchThreshold(Integer.MAX_VALUE);

        java.lang.management.ThreadMXBean t = ManagementFactory.getThreadMXBean();
        long c0 = t.getCurrentThreadCpuTime(), w0 = System.nanoTime();
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        double cpu = (t.getCurrentThreadCpuTime() - c0) / 1e9, wall = (System.nanoTime() - w0) / 1e9;

        StringBuilder j = new StringBuilder("{");
        j.append("\"arx_version\": ").append(q(ARXAnonymizer.VERSION));
        j.append(", \"rows\": ").append(rows);
        j.append(", \"privacy_model\": ").append(q(pc.toString()));
        j.append(", \"metric\": ").append(q(metric.toString()));
        j.append(", \"monotonicity_of_privacy\": ").append(q(String.valueOf(config.getMonotonicityOfPrivacy())));
        j.append(", \"monotonicity_of_utility\": ").append(q(String.valueOf(config.getMonotonicityOfUtility())));
        if (pc instanceof ProfitabilityProsecutorNoAttack) j.append(", \"no_attack_k\": ").append(((ProfitabilityProsecutorNoAttack) pc).getK());
        ARXNode opt = result.getGlobalOptimum();
        j.append(", \"optimum_found\": ").append(result.getOptimumFound());
        if (opt == null) {
            j.append(", \"node\": null");
        } else {
            List<Integer> node = new ArrayList<>();
            StringBuilder named = new StringBuilder("{");
            for (String a : qids.keySet()) {
                node.add(opt.getGeneralization(a));
                named.append(named.length() > 1 ? ", " : "").append(q(a)).append(": ").append(opt.getGeneralization(a));
            }
            j.append(", \"node\": ").append(named).append("}");
            j.append(", \"node_vector\": ").append(node);
            j.append(", \"arx_information_loss_value\": ").append(num(Double.parseDouble(opt.getHighestScore().getValue().toString())));
            for (QualityMetadata<?> m : opt.getHighestScore().getMetadata()) {
                if (m.getParameter().equals("Publisher payout")) j.append(", \"publisher_payout\": ").append(num((Double) m.getValue()));
            }
            DataHandle out = result.getOutput(opt, false);
            StatisticsEquivalenceClasses st = (subset != null ? out.getView() : out).getStatistics().getEquivalenceClassStatistics();
            j.append(", \"arx_class_statistics\": {\"equivalence_classes\": ").append(st.getNumberOfEquivalenceClasses());
            j.append(", \"suppressed_records\": ").append(st.getNumberOfSuppressedRecords()).append("}");
        }
        j.append(", \"transformations_checked\": ").append(result.getProcessStatistics().getTransformationsChecked());
        j.append(", \"cpu_anonymize_main_thread_s\": ").append(cpu);
        j.append(", \"time_anonymize_s\": ").append(wall);
        double pcpu = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
        j.append(", \"process_cpu_s\": ").append(pcpu).append("}");
        System.out.println(j);
    }
}
