/*
 * ARX 3.9.2's adaptive local recoding, ARXResult.optimizeIterative(output, gsFactor, maxIterations,
 * adaptionFactor), which the shared harness (../shared/arx/harness/ArxRun.java) does not call: the
 * global optimum (FLASH over the whole lattice, as ArxRun runs it), then the recoding of its output,
 * printed as one JSON object (docs/adr/0048). Only ARX's public API; compiled and run by
 * arx-iterative beside it (tests/arx_answers.py: ITERATIVE; benchmarks/bench_arx_tables.py).
 *
 *   benchmarks/arx_iterative/arx-iterative --input adult.csv --sep ';' \
 *     --qid age=adult_hierarchy_age.csv ... --k 5 --suppression 1 --metric loss \
 *     --iterative 0.05:100:0.05 [--output out.csv]
 *
 * --metric dmstar | loss (ARX's Loss, geometric mean; --gs-factor G for the global search).
 * JSON: node (QID -> level, as ArxRun), node_vector (levels in --qid order),
 * arx_class_statistics.suppressed_records (the global optimum's), local_recoding: steps[]
 * (node, records_transformed, score: every optimize call with a solution, a call that
 * released nothing included), suppressed_after, own (the recoded
 * output's partition by the QIs' output strings); cpu_anonymize_main_thread_s: the search and
 * the recoding on the calling thread.
 */

import java.io.File;
import java.io.FileWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXProcessStatistics;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.InformationLoss;
import org.deidentifier.arx.metric.Metric;
import org.deidentifier.arx.metric.Metric.AggregateFunction;

public class ArxIterative {

    public static void main(String[] args) throws Exception {
        String input = null, metric = "dmstar", iterative = null, output = null;
        char sep = ',';
        int k = 0;
        double suppression = 0d, gs = Double.NaN;
        Map<String, String> qids = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            String a = args[i], v = args[i + 1];
            switch (a) {
                case "--input": input = v; break;
                case "--sep": sep = v.charAt(0); break;
                case "--qid": qids.put(v.substring(0, v.indexOf('=')), v.substring(v.indexOf('=') + 1)); break;
                case "--insensitive": break; // every column that is not a QID is insensitive
                case "--k": k = Integer.parseInt(v); break;
                case "--suppression": suppression = Double.parseDouble(v); break;
                case "--metric": metric = v; break;
                case "--gs-factor": gs = Double.parseDouble(v); break;
                case "--iterative": iterative = v; break;
                case "--output": output = v; break;
                default: throw new IllegalArgumentException("unknown argument " + a);
            }
        }
        long cpu0 = cpu();
        Data data = Data.create(input, StandardCharsets.UTF_8, sep);
        for (Map.Entry<String, String> e : qids.entrySet()) {
            data.getDefinition().setAttributeType(e.getKey(), Hierarchy.create(new File(e.getValue()), StandardCharsets.UTF_8, sep));
        }
        DataHandle in = data.getHandle();
        for (int c = 0; c < in.getNumColumns(); c++) {
            String name = in.getAttributeName(c);
            if (!qids.containsKey(name)) data.getDefinition().setAttributeType(name, AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        int rows = in.getNumRows();
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new KAnonymity(k));
        config.setSuppressionLimit(suppression);
        Metric<?> m;
        if (metric.equals("loss")) {
            m = Double.isNaN(gs) ? Metric.createLossMetric() : Metric.createLossMetric(gs, AggregateFunction.GEOMETRIC_MEAN);
        } else if (metric.equals("dmstar")) {
            m = Metric.createDiscernabilityMetric(true);
        } else {
            throw new IllegalArgumentException("--metric dmstar or loss");
        }
        config.setQualityModel(m);
        config.setAlgorithm(ARXConfiguration.AnonymizationAlgorithm.OPTIMAL);
        config.setHeuristicSearchThreshold(Integer.MAX_VALUE);
        long thread0 = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        ARXNode opt = result.getGlobalOptimum();
        StringBuilder j = new StringBuilder("{\n");
        put(j, "arx_version", "\"" + ARXAnonymizer.VERSION + "\"");
        put(j, "rows", rows);
        int[] node = levels(opt.getTransformation(), opt, qids);
        StringBuilder named = new StringBuilder("{");
        int q = 0;
        for (String name : qids.keySet()) named.append(q == 0 ? "" : ", ").append('"').append(name).append("\": ").append(node[q++]);
        put(j, "node", named.append("}"));
        put(j, "node_vector", Arrays.toString(node));
        DataHandle out = result.getOutput(false);
        put(j, "arx_class_statistics", "{\"suppressed_records\": " + outliers(out) + "}");
        if (iterative != null) {
            String[] p = iterative.split(":");
            double stepGs = Double.parseDouble(p[0]);
            int maxIterations = Integer.parseInt(p[1]);
            double adaption = Double.parseDouble(p[2]);
            StringBuilder x = new StringBuilder("{\"method\": \"ARXResult.optimizeIterative\", \"gs_factor\": ")
                .append(stepGs).append(", \"max_iterations\": ").append(maxIterations)
                .append(", \"adaption_factor\": ").append(adaption);
            ARXProcessStatistics st = result.optimizeIterative(out, stepGs, maxIterations, adaption);
            StringBuilder steps = new StringBuilder("[");
            for (int i = 0; i < st.getNumberOfSteps(); i++) {
                ARXProcessStatistics.Step s = st.getStep(i);
                InformationLoss<?> sc = s.getScore();
                steps.append(i == 0 ? "\n  " : ",\n  ").append("{\"node\": ")
                     .append(Arrays.toString(levels(s.getTransformation(), opt, qids)))
                     .append(", \"records_transformed\": ").append(s.getNumberOfRecordsTransformed())
                     .append(", \"score\": ").append(sc == null ? "null" : "\"" + sc.toString() + "\"").append("}");
            }
            x.append(",\n \"steps\": ").append(steps.append(st.getNumberOfSteps() == 0 ? "]" : "\n ]"));
            x.append(",\n \"suppressed_after\": ").append(outliers(out));
            x.append(",\n \"own\": ").append(partition(out, qids, rows));
            put(j, "local_recoding", x.append("}").toString());
        }
        long thread = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - thread0;
        put(j, "cpu_anonymize_main_thread_s", String.format(Locale.ROOT, "%.3f", thread / 1e9));
        if (output != null) {
            try (FileWriter w = new FileWriter(output, StandardCharsets.UTF_8)) {
                for (int r = -1; r < rows; r++) {
                    StringBuilder line = new StringBuilder();
                    for (int c = 0; c < out.getNumColumns(); c++) {
                        if (c > 0) line.append(sep);
                        line.append(r < 0 ? out.getAttributeName(c) : out.getValue(r, c));
                    }
                    w.write(line.append('\n').toString());
                }
            }
        }
        put(j, "process_cpu_s", String.format(Locale.ROOT, "%.3f", (cpu() - cpu0) / 1e9));
        j.setLength(j.length() - 2);
        System.out.println(j.append("\n}"));
    }

    /** A transformation (ARX's attribute order) as levels in --qid order. */
    static int[] levels(int[] transformation, ARXNode opt, Map<String, String> qids) {
        List<String> order = Arrays.asList(opt.getQuasiIdentifyingAttributes());
        int[] out = new int[qids.size()];
        int i = 0;
        for (String q : qids.keySet()) out[i++] = transformation[order.indexOf(q)];
        return out;
    }

    static int outliers(DataHandle out) {
        int n = 0;
        for (int r = 0; r < out.getNumRows(); r++) n += out.isOutlier(r) ? 1 : 0;
        return n;
    }

    /** The output's classes by the QIs' output strings (suppressed rows apart). */
    static String partition(DataHandle out, Map<String, String> qids, int rows) {
        List<Integer> cols = new ArrayList<>();
        for (String q : qids.keySet()) cols.add(out.getColumnIndexOf(q));
        HashMap<String, int[]> classes = new HashMap<>();
        long s = 0;
        for (int r = 0; r < rows; r++) {
            if (out.isOutlier(r)) { s++; continue; }
            StringBuilder key = new StringBuilder();
            for (int c : cols) key.append(out.getValue(r, c)).append('\u0001');
            classes.computeIfAbsent(key.toString(), x -> new int[1])[0]++;
        }
        long sq = 0;
        int min = classes.isEmpty() ? 0 : Integer.MAX_VALUE;
        for (int[] c : classes.values()) { sq += (long) c[0] * c[0]; min = Math.min(min, c[0]); }
        return "{\"equivalence_classes\": " + classes.size() + ", \"suppressed_records\": " + s
            + ", \"min_class_size\": " + min + ", \"dm_star_skald\": " + (sq + s * s) + "}";
    }

    static void put(StringBuilder j, String key, Object value) {
        j.append(" \"").append(key).append("\": ").append(value).append(",\n");
    }

    static long cpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }
}
