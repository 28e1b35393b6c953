package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The allocator's command line: the defaults, every form it takes, and the exact line of every refusal. */
class AllocatorFlagsTest {
    @TempDir
    static Path dir;
    static String cert;
    static String key;
    static String kubeconfig;

    @BeforeAll
    static void files() throws IOException {
        cert = Files.writeString(dir.resolve("tls.crt"), "cert").toString();
        key = Files.writeString(dir.resolve("tls.key"), "key").toString();
        kubeconfig = Files.writeString(dir.resolve("kubeconfig"), "apiVersion: v1").toString();
    }

    /** The webhook flags, then {@code more}. */
    static String[] webhook(String... more) {
        List<String> a = new ArrayList<>(List.of("--webhook-port", "8443", "--tls-cert", cert, "--tls-key", key));
        a.addAll(List.of(more));
        return a.toArray(String[]::new);
    }

    static String refusal(String... args) {
        return assertThrows(AllocatorFlags.BadFlagException.class, () -> AllocatorFlags.parse(args)).getMessage();
    }

    @Test
    void defaults() {
        AllocatorFlags f = AllocatorFlags.parse(webhook());
        assertEquals(Optional.empty(), f.kubeconfig());
        assertEquals(List.of(DraNames.DEVICE_CLASS), f.deviceClasses());
        assertEquals(PlacementPolicy.FRAGMENTATION, f.policy());
        assertEquals(8, f.shortlist());
        assertEquals(PlacementConfig.builder().nodePolicy(PlacementPolicy.FRAGMENTATION).gpuPolicy(PlacementPolicy.FRAGMENTATION)
                .build(), f.placementConfig(), "the engine's defaults apart from the policy");
        assertEquals(GranularityRules.ofDefaults(), f.rules());
        assertEquals(new AllocatorFlags.Webhook(8443, Path.of(cert), Path.of(key)), f.webhook().orElseThrow());
        assertFalse(f.leaderElect());
        assertEquals(Optional.empty(), f.leaseNamespace());
        assertEquals(Duration.ofSeconds(10), f.apiTimeout());
        assertFalse(f.help());
    }

    @Test
    void everyFlagInBothForms() {
        AllocatorFlags f = AllocatorFlags.parse("--kubeconfig=" + kubeconfig, "--device-class", "a.example.com",
                "--device-class=b.example.com", "--policy", "binpack", "--shortlist=5000", "--rules=hami", "--webhook-port=9443", "--tls-cert=" + cert,
                "--tls-key", key, "--leader-elect", "--lease-namespace=qgpu", "--api-timeout", "500ms");
        assertEquals(Optional.of(Path.of(kubeconfig)), f.kubeconfig());
        assertEquals(List.of("a.example.com", "b.example.com"), f.deviceClasses());
        assertEquals(PlacementPolicy.BINPACK, f.policy());
        assertEquals(5000, f.shortlist());
        assertEquals(PlacementConfig.builder().nodePolicy(PlacementPolicy.BINPACK).gpuPolicy(PlacementPolicy.BINPACK).shortlist(5000)
                .build(), f.placementConfig());
        assertEquals(GranularityRules.hami(), f.rules());
        assertEquals(9443, f.webhook().orElseThrow().port());
        assertTrue(f.leaderElect());
        assertEquals(Optional.of("qgpu"), f.leaseNamespace());
        assertEquals("qgpu", f.leaseNamespace(Map.of("POD_NAMESPACE", "other")));
        assertEquals(Duration.ofMillis(500), f.apiTimeout());
        assertEquals(PlacementPolicy.SPREAD, AllocatorFlags.parse(webhook("--policy", "spread")).policy());
        assertEquals(GranularityRules.gpuManager(), AllocatorFlags.parse(webhook("--rules", "gpu-manager")).rules());
    }

    @Test
    void noWebhook() {
        AllocatorFlags f = AllocatorFlags.parse("--no-webhook");
        assertEquals(Optional.empty(), f.webhook());
    }

    @Test
    void theLeaseNamespaceDefaultsToThePodsThenKubeSystem() {
        AllocatorFlags f = AllocatorFlags.parse("--no-webhook", "--leader-elect");
        assertEquals("qgpu-system", f.leaseNamespace(Map.of("POD_NAMESPACE", "qgpu-system")));
        assertEquals("kube-system", f.leaseNamespace(Map.of("POD_NAMESPACE", " ")));
        assertEquals("kube-system", f.leaseNamespace(Map.of()));
    }

    @Test
    void helpChecksOnlyTheSyntax() {
        assertTrue(AllocatorFlags.parse("--help").help());
        assertTrue(AllocatorFlags.parse("--policy", "nonsense", "--help").help());
        assertEquals("unknown argument --nope", refusal("--help", "--nope"));
        assertTrue(AllocatorFlags.USAGE.contains("--webhook-port N") && AllocatorFlags.USAGE.contains("--no-webhook"));
    }

    @Test
    void unknownArgumentsAndMissingOrEmptyValues() {
        assertEquals("unknown argument --port", refusal(webhook("--port", "1")));
        assertEquals("unknown argument stray", refusal(webhook("stray")));
        assertEquals("--policy needs a value", refusal(webhook("--policy")));
        assertEquals("--policy needs a value", refusal(webhook("--policy", "--leader-elect")));
        assertEquals("--kubeconfig \"\": must not be empty", refusal(webhook("--kubeconfig=")));
        assertEquals("--device-class needs a value", refusal(webhook("--device-class")));
        assertEquals("--device-class needs a value", refusal(webhook("--device-class", "--no-webhook")));
        assertEquals("--device-class \"\": must not be empty", refusal(webhook("--device-class=")));
        assertEquals("--leader-elect=true: --leader-elect takes no value", refusal(webhook("--leader-elect=true")));
        assertEquals("--no-webhook=yes: --no-webhook takes no value", refusal("--no-webhook=yes"));
    }

    @Test
    void aSingleValuedFlagOrASwitchGivenTwice() {
        assertEquals("--policy is given twice", refusal(webhook("--policy", "binpack", "--policy=spread")));
        assertEquals("--webhook-port is given twice", refusal(webhook("--webhook-port", "9443")));
        assertEquals("--leader-elect is given twice", refusal(webhook("--leader-elect", "--leader-elect")));
        assertEquals("--no-webhook is given twice", refusal("--no-webhook", "--no-webhook"));
        assertEquals("--device-class gpu.qgpu.io is given twice", refusal(webhook("--device-class", "gpu.qgpu.io",
                "--device-class=gpu.qgpu.io")));
    }

    @Test
    void badValues() {
        assertEquals("--policy first-fit: must be fragmentation, binpack or spread", refusal(webhook("--policy", "first-fit")));
        assertEquals("--rules mig: must be qgpu, hami or gpu-manager", refusal(webhook("--rules", "mig")));
        assertEquals("--shortlist 0: must be a whole number of nodes, 1 or more", refusal(webhook("--shortlist", "0")));
        assertEquals("--shortlist -3: must be a whole number of nodes, 1 or more", refusal(webhook("--shortlist=-3")));
        assertEquals("--shortlist all: must be a whole number of nodes, 1 or more", refusal(webhook("--shortlist", "all")));
        assertEquals("--shortlist 1e9: must be a whole number of nodes, 1 or more", refusal(webhook("--shortlist", "1e9")));
        assertEquals("--api-timeout = \"10\": must be a duration: a number and a unit: ns, us, ms, s or m"
                + " (for example \"250ms\", \"1.5s\", \"40us\", \"2m\")",
                refusal(webhook("--api-timeout", "10")));
        assertEquals("--api-timeout 11m: must be above 0 and at most 10m", refusal(webhook("--api-timeout", "11m")));
        assertEquals("--device-class GPU_Class: must be a DeviceClass name (a DNS subdomain: lower-case letters, digits, '-' and '.')",
                refusal(webhook("--device-class", "GPU_Class")));
        assertEquals("--kubeconfig " + dir.resolve("none") + ": no such file", refusal(webhook("--kubeconfig", dir.resolve("none").toString())));
        assertEquals("--kubeconfig " + dir + ": not a file", refusal(webhook("--kubeconfig", dir.toString())));
    }

    @Test
    void theWebhookPortAndFiles() {
        for (String port : List.of("0", "65536", "-1", "http", "8443.0")) {
            assertEquals("--webhook-port " + port + ": must be a whole number between 1 and 65535",
                    refusal("--webhook-port=" + port, "--tls-cert", cert, "--tls-key", key));
        }
        assertEquals(65535, AllocatorFlags.parse("--webhook-port", "65535", "--tls-cert", cert, "--tls-key", key)
                .webhook().orElseThrow().port());
        String missing = dir.resolve("missing.crt").toString();
        assertEquals("--tls-cert " + missing + ": no such file", refusal("--webhook-port", "8443", "--tls-cert", missing, "--tls-key", key));
        assertEquals("--tls-key " + dir + ": not a file", refusal("--webhook-port", "8443", "--tls-cert", cert, "--tls-key", dir.toString()));
    }

    @Test
    void exactlyOneWebhookForm() {
        assertEquals("no webhook flags: give --webhook-port N --tls-cert FILE --tls-key FILE, or --no-webhook", refusal());
        assertEquals("no webhook flags: give --webhook-port N --tls-cert FILE --tls-key FILE, or --no-webhook",
                refusal("--leader-elect"));
        assertEquals("--no-webhook: not with --webhook-port, --tls-cert, --tls-key (the webhook is either served or not)",
                refusal(webhook("--no-webhook")));
        assertEquals("--no-webhook: not with --tls-key (the webhook is either served or not)", refusal("--no-webhook", "--tls-key", key));
        assertEquals("--webhook-port 8443: needs --tls-cert and --tls-key too (the webhook needs --webhook-port, --tls-cert and --tls-key)",
                refusal("--webhook-port", "8443"));
        assertEquals("--tls-cert " + cert + ": needs --tls-key too (the webhook needs --webhook-port, --tls-cert and --tls-key)",
                refusal("--tls-cert", cert, "--webhook-port", "8443"));
        assertEquals("--tls-cert " + cert + ": needs --webhook-port too (the webhook needs --webhook-port, --tls-cert and --tls-key)",
                refusal("--tls-cert", cert, "--tls-key", key));
    }

    @Test
    void theLeaseNamespace() {
        assertEquals("--lease-namespace qgpu: only with --leader-elect (no Lease without it)", refusal(webhook("--lease-namespace", "qgpu")));
        assertEquals("--lease-namespace Kube_System: must be a namespace name (at most 63 lower-case letters, digits and '-', a letter or"
                + " digit at each end)", refusal(webhook("--leader-elect", "--lease-namespace", "Kube_System")));
        String long64 = "a".repeat(64);
        assertTrue(refusal(webhook("--leader-elect", "--lease-namespace", long64)).startsWith("--lease-namespace " + long64 + ": must be"));
        assertEquals("a".repeat(63), AllocatorFlags.parse(webhook("--leader-elect", "--lease-namespace", "a".repeat(63)))
                .leaseNamespace().orElseThrow());
    }
}
