// AuthorizerBench times Apache's StandardAuthorizer.authorize on the ACLs
// and actions kraftd's BenchmarkAuthorizerVsApache writes, so both are
// measured on one machine in one run. Written for kraftd; it only calls
// Apache's public classes from the jars in the cache.
//
// Usage: AuthorizerBench <acls.tsv> <actions.tsv> <warm-up rounds>
// acls.tsv:    resourceType name patternType principal host operation permission (codes)
// actions.tsv: principal host operation resourceType name
// Prints: acls=N actions=N allowed=N p50_ns=N p99_ns=N
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;

public class AuthorizerBench {
    record Context(KafkaPrincipal principal, InetAddress clientAddress) implements AuthorizableRequestContext {
        public String listenerName() { return "CONTROLLER"; }
        public SecurityProtocol securityProtocol() { return SecurityProtocol.SASL_SSL; }
        public int requestType() { return 19; }
        public int requestVersion() { return 7; }
        public String clientId() { return "bench"; }
        public int correlationId() { return 1; }
    }

    public static void main(String[] args) throws Exception {
        StandardAuthorizer authorizer = new StandardAuthorizer();
        authorizer.configure(Map.of("super.users", "User:admin"));
        // A broker or controller hands its plugins their metrics; authorize() records to them.
        authorizer.withPluginMetrics(new PluginMetricsImpl(new Metrics(), Map.of()));
        Map<Uuid, StandardAcl> acls = new HashMap<>();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            String[] f = line.split("\t", -1);
            acls.put(Uuid.randomUuid(), new StandardAcl(ResourceType.fromCode(Byte.parseByte(f[0])), f[1],
                PatternType.fromCode(Byte.parseByte(f[2])), f[3], f[4], AclOperation.fromCode(Byte.parseByte(f[5])),
                AclPermissionType.fromCode(Byte.parseByte(f[6]))));
        }
        authorizer.loadSnapshot(acls);
        authorizer.completeInitialLoad();

        List<Context> contexts = new ArrayList<>();
        List<List<Action>> actions = new ArrayList<>();
        Map<String, KafkaPrincipal> principals = new HashMap<>();
        for (String line : Files.readAllLines(Paths.get(args[1]))) {
            String[] f = line.split("\t", -1);
            KafkaPrincipal p = principals.computeIfAbsent(f[0], s -> {
                int colon = s.indexOf(':');
                return new KafkaPrincipal(s.substring(0, colon), s.substring(colon + 1));
            });
            contexts.add(new Context(p, InetAddress.getByName(f[1])));
            actions.add(List.of(new Action(AclOperation.fromCode(Byte.parseByte(f[2])),
                new ResourcePattern(ResourceType.fromCode(Byte.parseByte(f[3])), f[4], PatternType.LITERAL), 1, false, false)));
        }
        int rounds = Integer.parseInt(args[2]);
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < actions.size(); i++) {
                authorizer.authorize(contexts.get(i), actions.get(i));
            }
        }
        long[] ns = new long[actions.size()];
        int allowed = 0;
        for (int i = 0; i < actions.size(); i++) {
            long start = System.nanoTime();
            List<AuthorizationResult> res = authorizer.authorize(contexts.get(i), actions.get(i));
            ns[i] = System.nanoTime() - start;
            if (res.get(0) == AuthorizationResult.ALLOWED) allowed++;
        }
        Arrays.sort(ns);
        System.out.printf("acls=%d actions=%d allowed=%d p50_ns=%d p99_ns=%d%n", acls.size(), actions.size(), allowed,
            ns[ns.length / 2], ns[ns.length * 99 / 100]);
    }
}
