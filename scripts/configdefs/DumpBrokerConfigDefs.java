// Prints, as JSON on standard output, the facts kraftd needs about one Apache
// Kafka release's broker/controller configuration (KafkaConfig): every key's
// type, default and whether it is internal or dynamically updatable, the
// dynamic-only broker quota keys, and the key sets that decide which dynamic
// values a node keeps. Run against that release's jars by
// scripts/gen-config-defs.sh; kraftd's kafkaconfig package embeds the output.
// It reads class members by reflection because their homes moved between
// releases (Scala objects up to 4.2, Java classes from 4.3).
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.config.ConfigDef;

public class DumpBrokerConfigDefs {
    public static void main(String[] args) throws Exception {
        ConfigDef def = (ConfigDef) staticField("org.apache.kafka.server.config.AbstractKafkaConfig", "CONFIG_DEF");
        StringBuilder out = new StringBuilder();
        out.append("{\n  \"keys\": [\n");
        List<String> rows = new ArrayList<>();
        for (Map.Entry<String, ConfigDef.ConfigKey> e : new TreeMap<>(def.configKeys()).entrySet()) {
            rows.add("    " + key(e.getValue()));
        }
        out.append(String.join(",\n", rows)).append("\n  ],\n");

        ConfigDef quota = (ConfigDef) firstStaticCall("brokerQuotaConfigs",
                "org.apache.kafka.server.config.QuotaConfig", "org.apache.kafka.server.config.QuotaConfigs");
        rows.clear();
        for (Map.Entry<String, ConfigDef.ConfigKey> e : new TreeMap<>(quota.configKeys()).entrySet()) {
            rows.add("    " + key(e.getValue()));
        }
        out.append("  \"quotaKeys\": [\n").append(String.join(",\n", rows)).append("\n  ],\n");

        out.append("  \"dynamic\": ").append(list(dynamicSet("ALL_DYNAMIC_CONFIGS", "AllDynamicConfigs"))).append(",\n");
        out.append("  \"perBroker\": ").append(list(dynamicSet("PER_BROKER_CONFIGS", "PerBrokerConfigs"))).append(",\n");
        out.append("  \"securityDynamic\": ").append(list(toStrings(
                staticField("org.apache.kafka.common.config.SslConfigs", "RECONFIGURABLE_CONFIGS")))).append("\n}\n");
        System.out.print(out);
    }

    static String key(ConfigDef.ConfigKey k) {
        String dflt = k.hasDefault() && k.defaultValue != null ? ConfigDef.convertToString(k.defaultValue, k.type) : null;
        return "{\"name\": " + quote(k.name) + ", \"type\": " + quote(k.type.name()) + ", \"default\": " + quote(dflt)
                + (k.internalConfig ? ", \"internal\": true" : "") + "}";
    }

    // dynamicSet reads a DynamicBrokerConfig key set: a Java static field
    // (4.3+) or a field of the Scala object kafka.server.DynamicBrokerConfig$.
    static TreeSet<String> dynamicSet(String javaName, String scalaName) throws Exception {
        try {
            return toStrings(staticField("org.apache.kafka.server.config.DynamicBrokerConfig", javaName));
        } catch (ClassNotFoundException | NoSuchFieldException e) {
            Class<?> c = Class.forName("kafka.server.DynamicBrokerConfig$");
            Object module = c.getField("MODULE$").get(null);
            for (Field f : c.getDeclaredFields()) {
                if (f.getName().equals(scalaName) || f.getName().endsWith("$$" + scalaName)) {
                    f.setAccessible(true);
                    return toStrings(f.get(module));
                }
            }
            throw new NoSuchFieldException(scalaName);
        }
    }

    static TreeSet<String> toStrings(Object set) throws Exception {
        TreeSet<String> names = new TreeSet<>();
        if (set instanceof Collection<?> c) {
            for (Object o : c) names.add((String) o);
            return names;
        }
        // a scala.collection.Set
        Object it = set.getClass().getMethod("iterator").invoke(set);
        Method hasNext = it.getClass().getMethod("hasNext"), next = it.getClass().getMethod("next");
        hasNext.setAccessible(true);
        next.setAccessible(true);
        while ((Boolean) hasNext.invoke(it)) names.add((String) next.invoke(it));
        return names;
    }

    static Object staticField(String cls, String name) throws Exception {
        Field f = Class.forName(cls).getDeclaredField(name);
        f.setAccessible(true);
        return f.get(null);
    }

    static Object firstStaticCall(String method, String... classes) throws Exception {
        for (String cls : classes) {
            try {
                return Class.forName(cls).getMethod(method).invoke(null);
            } catch (ClassNotFoundException e) {
                // the next name is the class's home in other releases
            }
        }
        throw new ClassNotFoundException(String.join(" or ", classes));
    }

    static String list(TreeSet<String> names) {
        List<String> q = new ArrayList<>();
        for (String n : names) q.add(quote(n));
        return "[" + String.join(", ", q) + "]";
    }

    static String quote(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\t' -> b.append("\\t");
                default -> {
                    if (ch < 0x20 || ch > 0x7e) b.append(String.format("\\u%04x", (int) ch));
                    else b.append(ch);
                }
            }
        }
        return b.append('"').toString();
    }
}
