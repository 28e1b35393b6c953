package io.qgpu.kubernetes.allocator;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.Validate;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.kubernetes.node.AgentFlags;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The allocator's command line, read and checked before anything starts:
 *
 * <pre>
 * qgpu-dra-allocator [--kubeconfig FILE] [--device-class NAME]... [--policy fragmentation|binpack|spread]
 *                    [--shortlist N] [--rules qgpu|hami|gpu-manager] (--webhook-port N --tls-cert FILE --tls-key FILE | --no-webhook)
 *                    [--leader-elect [--lease-namespace NS]] [--api-timeout DURATION] [--help]
 * </pre>
 *
 * <p>Each valued flag takes its value as the next argument or after {@code =}, as the node agents' flags
 * ({@link AgentFlags#parse}, which reads them); {@code --device-class} may be given several times, each class once;
 * {@code --leader-elect} and {@code --no-webhook} take no value. Refused, with a {@link BadFlagException} whose message
 * is one line naming the flag and the value as written: an unknown argument, a flag without its value or with an empty
 * one, a single-valued flag or a switch given twice, a bad value, both webhook forms or neither, a webhook form without
 * all three of its flags, a TLS or kubeconfig file that does not exist or cannot be read,
 * {@code --lease-namespace} without {@code --leader-elect}. With {@code --help} only
 * the syntax is checked and {@link #help()} is true.
 *
 * <pre>{@code
 * AllocatorFlags f = AllocatorFlags.parse("--webhook-port", "8443", "--tls-cert", "/tls/tls.crt", "--tls-key", "/tls/tls.key",
 *         "--policy", "binpack", "--leader-elect");
 * f.webhook().orElseThrow().port();   // 8443
 * f.deviceClasses();                  // [gpu.qgpu.io]
 * f.policy();                         // BINPACK
 * AllocatorFlags.parse("--no-webhook", "--webhook-port", "8443");
 * // BadFlagException: --no-webhook: not with --webhook-port (the webhook is either served or not)
 * }</pre>
 *
 * @param kubeconfig     {@code --kubeconfig}: the cluster; empty: fabric8's usual lookup (KUBECONFIG, ~/.kube/config,
 *                       in-cluster)
 * @param deviceClasses  {@code --device-class}: the DeviceClasses whose claims the allocator allocates and whose pods the
 *                       webhook gates, in the order given; default {@link DraNames#DEVICE_CLASS}
 * @param policy         {@code --policy}: the placement policy; default {@link PlacementPolicy#FRAGMENTATION}
 * @param shortlist      {@code --shortlist}: how many nodes, best first by the node policy's load, get their GPU sets
 *                       searched and the fragmentation term computed ({@link PlacementConfig#shortlist()}); default
 *                       {@value #DEFAULT_SHORTLIST}, the engine's; a number at least the node count searches every node, as
 *                       the trace replay of the allocator does (the README's figures)
 * @param rules          {@code --rules}: the granularity preset ({@link AgentFlags#rules}); default qgpu
 * @param webhook        the admission webhook's port and TLS files; empty with {@code --no-webhook}
 * @param leaderElect    {@code --leader-elect}: one of several replicas, leader election on a Lease
 * @param leaseNamespace {@code --lease-namespace}: the Lease's namespace; empty: {@link #leaseNamespace(Map)}'s default
 * @param apiTimeout     {@code --api-timeout}: how long the API server may take to answer at start
 *                       ({@link AgentFlags#apiTimeout}; default 10s)
 * @param help           {@code --help} was given: print the usage ({@link #USAGE}) and exit 0; nothing else was checked
 *
 * <p>Thread safety: immutable.
 */
public record AllocatorFlags(Optional<Path> kubeconfig, List<String> deviceClasses, PlacementPolicy policy,
                             int shortlist, GranularityRules rules, Optional<Webhook> webhook, boolean leaderElect,
                             Optional<String> leaseNamespace, Duration apiTimeout, boolean help) {

    /** The default of {@code --shortlist}: the placement engine's own ({@link PlacementConfig#shortlist()}). */
    public static final int DEFAULT_SHORTLIST = 8;

    /** The usage text, for {@code --help} and after a refused command line. */
    public static final String USAGE = String.join("\n",
            "usage: qgpu-dra-allocator [options] (--webhook-port N --tls-cert FILE --tls-key FILE | --no-webhook)",
            "  --kubeconfig FILE      the cluster (default: KUBECONFIG, ~/.kube/config or in-cluster)",
            "  --device-class NAME    a DeviceClass whose claims are allocated here; repeatable (default " + DraNames.DEVICE_CLASS + ")",
            "  --policy P             fragmentation (default), binpack or spread",
            "  --shortlist N          how many nodes get their GPU sets searched per decision, best first by load (default "
                    + DEFAULT_SHORTLIST + "; the node count or more: every node)",
            "  --rules NAME           granularity preset: qgpu (default), hami or gpu-manager",
            "  --webhook-port N       the mutating admission webhook's HTTPS port (1-65535), with --tls-cert and --tls-key",
            "  --tls-cert FILE        the webhook's certificate chain (PEM)",
            "  --tls-key FILE         the webhook's private key (PEM: PKCS#1 or PKCS#8 RSA, or EC)",
            "  --no-webhook           no webhook: pods carry the scheduling gate " + DraNames.SCHEDULING_GATE + " themselves",
            "  --leader-elect         several replicas: leader election on a coordination.k8s.io Lease",
            "  --lease-namespace NS   the Lease's namespace (default: $POD_NAMESPACE, else kube-system)",
            "  --api-timeout D        how long the API server may take to answer at start (default 10s)",
            "  --help                 this text") + "\n";

    /** The default of {@code --lease-namespace} when {@code $POD_NAMESPACE} is not set. */
    public static final String DEFAULT_LEASE_NAMESPACE = "kube-system";

    private static final String DEVICE_CLASS = "--device-class";
    private static final String LEADER_ELECT = "--leader-elect";
    private static final String NO_WEBHOOK = "--no-webhook";
    private static final Set<String> SWITCHES = Set.of(LEADER_ELECT, NO_WEBHOOK);
    private static final Set<String> VALUED = Set.of("--kubeconfig", "--policy", "--shortlist", "--rules", "--webhook-port", "--tls-cert",
            "--tls-key", "--lease-namespace", "--api-timeout");
    private static final List<String> WEBHOOK_FLAGS = List.of("--webhook-port", "--tls-cert", "--tls-key");
    /** A namespace name: an RFC 1123 label. */
    private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

    /**
     * The admission webhook's settings.
     *
     * @param port    {@code --webhook-port}, 1 to 65535
     * @param tlsCert {@code --tls-cert}: a readable PEM file
     * @param tlsKey  {@code --tls-key}: a readable PEM file
     */
    public record Webhook(int port, Path tlsCert, Path tlsKey) {
        public Webhook {
            Validate.between("--webhook-port", port, 1, 65535);
            Objects.requireNonNull(tlsCert, "tlsCert");
            Objects.requireNonNull(tlsKey, "tlsKey");
        }
    }

    public AllocatorFlags {
        Objects.requireNonNull(kubeconfig, "kubeconfig");
        deviceClasses = List.copyOf(deviceClasses);
        Objects.requireNonNull(policy, "policy");
        Validate.atLeast("--shortlist", shortlist, 1);
        Objects.requireNonNull(rules, "rules");
        Objects.requireNonNull(webhook, "webhook");
        Objects.requireNonNull(leaseNamespace, "leaseNamespace");
        Objects.requireNonNull(apiTimeout, "apiTimeout");
    }

    /**
     * A refused command line: the message is one line naming the flag and the value as written. Main answers it with
     * exit code 2.
     */
    public static final class BadFlagException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        BadFlagException(String message) {
            super(message);
        }
    }

    /**
     * Reads and checks the command line.
     *
     * @throws BadFlagException one line naming the flag and the value
     */
    public static AllocatorFlags parse(String... args) {
        try {
            return read(args);
        } catch (BadFlagException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            // AgentFlags' lines name the flag and the value already
            throw new BadFlagException(e.getMessage());
        }
    }

    /**
     * The Lease's namespace: {@code --lease-namespace}, else {@code $POD_NAMESPACE} (the Deployment sets it from the
     * pod's namespace), else {@value #DEFAULT_LEASE_NAMESPACE}; as the scheduler extender's.
     */
    public String leaseNamespace(Map<String, String> env) {
        return leaseNamespace.orElseGet(() -> {
            String pod = env.get("POD_NAMESPACE");
            return pod == null || pod.isBlank() ? DEFAULT_LEASE_NAMESPACE : pod;
        });
    }

    private static AllocatorFlags read(String... args) {
        // the switches and the repeatable --device-class are taken out; AgentFlags reads the single-valued rest
        List<String> rest = new ArrayList<>();
        Set<String> switches = new LinkedHashSet<>();
        Set<String> classes = new LinkedHashSet<>();
        for (int i = 0; i < args.length; i++) {
            String a = Objects.requireNonNull(args[i], "argument");
            int eq = a.indexOf('=');
            String name = a.startsWith("--") && eq > 0 ? a.substring(0, eq) : a;
            if (SWITCHES.contains(name)) {
                if (!name.equals(a)) {
                    throw new BadFlagException(a + ": " + name + " takes no value");
                }
                if (!switches.add(a)) {
                    throw new BadFlagException(a + " is given twice");
                }
            } else if (name.equals(DEVICE_CLASS)) {
                List<String> one = new ArrayList<>(List.of(a));
                if (name.equals(a) && i + 1 < args.length && !args[i + 1].startsWith("--")) {
                    one.add(args[++i]);
                }
                String c = AgentFlags.parse(one, Set.of(DEVICE_CLASS)).get(DEVICE_CLASS);
                if (!Validate.isDnsSubdomain(c)) {
                    throw new BadFlagException(DEVICE_CLASS + " " + c
                            + ": must be a DeviceClass name (a DNS subdomain: lower-case letters, digits, '-' and '.')");
                }
                if (!classes.add(c)) {
                    throw new BadFlagException(DEVICE_CLASS + " " + c + " is given twice");
                }
            } else {
                rest.add(a);
            }
        }
        Map<String, String> opts = AgentFlags.parse(rest, VALUED);
        boolean help = opts.containsKey("--help");
        List<String> deviceClasses = classes.isEmpty() ? List.of(DraNames.DEVICE_CLASS) : List.copyOf(classes);
        if (help) {
            return new AllocatorFlags(Optional.empty(), deviceClasses, PlacementPolicy.FRAGMENTATION, DEFAULT_SHORTLIST,
                    GranularityRules.ofDefaults(),
                    Optional.empty(), switches.contains(LEADER_ELECT), Optional.empty(), AgentFlags.apiTimeout(Map.of()), true);
        }
        Optional<Path> kubeconfig = Optional.ofNullable(opts.get("--kubeconfig")).map(v -> {
            return readableFile("--kubeconfig", v);
        });
        PlacementPolicy policy = policy(opts.getOrDefault("--policy", PlacementPolicy.FRAGMENTATION.wireName()));
        int shortlist = shortlist(opts.getOrDefault("--shortlist", Integer.toString(DEFAULT_SHORTLIST)));
        GranularityRules rules = AgentFlags.rules(opts).orElseGet(GranularityRules::ofDefaults);
        Optional<Webhook> webhook = webhook(opts, switches.contains(NO_WEBHOOK));
        boolean leaderElect = switches.contains(LEADER_ELECT);
        Optional<String> leaseNamespace = Optional.ofNullable(opts.get("--lease-namespace"));
        if (leaseNamespace.isPresent()) {
            String ns = leaseNamespace.get();
            if (!leaderElect) {
                throw new BadFlagException("--lease-namespace " + ns + ": only with " + LEADER_ELECT + " (no Lease without it)");
            }
            if (!DNS_LABEL.matcher(ns).matches()) {
                throw new BadFlagException("--lease-namespace " + ns
                        + ": must be a namespace name (at most 63 lower-case letters, digits and '-', a letter or digit at each end)");
            }
        }
        return new AllocatorFlags(kubeconfig, deviceClasses, policy, shortlist, rules, webhook, leaderElect, leaseNamespace,
                AgentFlags.apiTimeout(opts), false);
    }

    /**
     * The placement engine's configuration these flags ask for: {@code --policy} at node and GPU level, {@code --shortlist};
     * the rest the engine's defaults. The allocator and its benchmarks build their engine from it.
     */
    public PlacementConfig placementConfig() {
        return PlacementConfig.builder().nodePolicy(policy).gpuPolicy(policy).shortlist(shortlist).build();
    }

    private static int shortlist(String v) {
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            n = 0;
        }
        if (n < 1) {
            throw new BadFlagException("--shortlist " + v + ": must be a whole number of nodes, 1 or more");
        }
        return n;
    }

    private static PlacementPolicy policy(String v) {
        try {
            return PlacementPolicy.fromName("--policy", v);
        } catch (InvalidValueException e) {
            throw new BadFlagException("--policy " + v + ": must be fragmentation, binpack or spread");
        }
    }

    /** Exactly one form: all three webhook flags, or {@code --no-webhook} alone. */
    private static Optional<Webhook> webhook(Map<String, String> opts, boolean noWebhook) {
        List<String> given = opts.keySet().stream().filter(WEBHOOK_FLAGS::contains).toList(); // as written
        if (noWebhook) {
            if (!given.isEmpty()) {
                throw new BadFlagException(NO_WEBHOOK + ": not with " + String.join(", ", given)
                        + " (the webhook is either served or not)");
            }
            return Optional.empty();
        }
        if (given.isEmpty()) {
            throw new BadFlagException("no webhook flags: give --webhook-port N --tls-cert FILE --tls-key FILE, or " + NO_WEBHOOK);
        }
        if (given.size() < WEBHOOK_FLAGS.size()) {
            List<String> missing = WEBHOOK_FLAGS.stream().filter(f -> !opts.containsKey(f)).toList();
            String first = given.get(0);
            throw new BadFlagException(first + " " + opts.get(first) + ": needs " + String.join(" and ", missing)
                    + " too (the webhook needs --webhook-port, --tls-cert and --tls-key)");
        }
        String p = opts.get("--webhook-port");
        int port;
        try {
            port = Integer.parseInt(p);
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 1 || port > 65535) {
            throw new BadFlagException("--webhook-port " + p + ": must be a whole number between 1 and 65535");
        }
        return Optional.of(new Webhook(port, readableFile("--tls-cert", opts.get("--tls-cert")),
                readableFile("--tls-key", opts.get("--tls-key"))));
    }

    /**
     * A file the allocator reads at start: it is opened (and closed) now, so that a missing file, a directory or one
     * this user may not read is said before anything starts. (The node module's {@code AgentChecks} cannot be loaded
     * here: it names the NVML binding, which the allocator leaves out.)
     */
    static Path readableFile(String flag, String value) {
        Path p = Path.of(value);
        if (Files.isDirectory(p)) {
            throw new BadFlagException(flag + " " + value + ": not a file");
        }
        try {
            Files.newByteChannel(p).close();
            return p;
        } catch (NoSuchFileException e) {
            throw new BadFlagException(flag + " " + value + ": no such file");
        } catch (AccessDeniedException e) {
            throw new BadFlagException(flag + " " + value + ": cannot be read (permission denied)");
        } catch (IOException e) {
            throw new BadFlagException(flag + " " + value + ": cannot be read (" + e.getMessage() + ")");
        }
    }
}
