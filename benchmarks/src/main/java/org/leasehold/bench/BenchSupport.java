package org.leasehold.bench;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** Argument parsing and formatting shared by the custom harnesses. */
final class BenchSupport {
    private BenchSupport() {
    }

    /** {@code --key value} pairs, with defaults. */
    static Map<String, String> args(String[] args, Map<String, String> defaults) {
        Map<String, String> m = new LinkedHashMap<>(defaults);
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--") || !m.containsKey(args[i].substring(2))) {
                throw new IllegalArgumentException("unknown option " + args[i] + "; known: " + defaults.keySet());
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        return m;
    }

    static Path dir(String s) {
        return Paths.get(s).toAbsolutePath();
    }

    static int[] ints(String csv) {
        String[] p = csv.split(",");
        int[] out = new int[p.length];
        for (int i = 0; i < p.length; i++) {
            out[i] = Integer.parseInt(p[i].trim());
        }
        return out;
    }

    static String mb(double bytesPerSecond) {
        return String.format(Locale.ROOT, "%.1f MB/s", bytesPerSecond / 1e6);
    }

    static String ms(double micros) {
        return String.format(Locale.ROOT, "%.2f ms", micros / 1000.0);
    }

    static String pct(double ratio) {
        return String.format(Locale.ROOT, "%.0f %%", ratio * 100);
    }
}
