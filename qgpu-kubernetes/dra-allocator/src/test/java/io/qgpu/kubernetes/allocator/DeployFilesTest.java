package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.LabelSelectorRequirement;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhook;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.RuleWithOperations;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimTemplate;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The deploy files parse as the objects they claim to be and agree with each other and with the code: the webhook's
 * configuration (failure policy Ignore, pods CREATE only, the Service's path and port leading to
 * {@link WebhookServer#MUTATE_PATH} on the Deployment's {@code --webhook-port}), the ClusterRole's exact verbs, the
 * Deployment's flags (as {@link AllocatorFlags} reads them; {@code --leader-elect} with more than one replica), the
 * claim templates (in the allocator's scope) and the hand-gated pod.
 */
@EnableKubernetesMockClient
class DeployFilesTest {
    static final Path DEPLOY = Path.of(System.getProperty("qgpu.allocator.deploy", "deploy"));
    static KubernetesClient client;

    /** The ClusterRole's rules, exactly: (API group, resource) to verbs. */
    static final Map<String, Set<String>> CLUSTER_ROLE = new TreeMap<>(Map.of(
            "resource.k8s.io resourceclaims", Set.of("get", "list", "watch", "update", "patch"),
            "resource.k8s.io resourceclaims/status", Set.of("get", "update", "patch"),
            "resource.k8s.io resourceclaims/binding", Set.of("update", "patch"),
            "resource.k8s.io resourceclaimtemplates", Set.of("get", "list", "watch"),
            "resource.k8s.io resourceslices", Set.of("get", "list", "watch"),
            "resource.k8s.io deviceclasses", Set.of("get", "list", "watch"),
            "core pods", Set.of("get", "list", "watch", "patch"),
            "core events", Set.of("create", "patch"),
            "events.k8s.io events", Set.of("create", "patch")));
    /** The Role's rules in the Lease's namespace. */
    static final Map<String, Set<String>> LEASE_ROLE = Map.of("coordination.k8s.io leases", Set.of("get", "list", "watch", "create", "update"));

    static List<HasMetadata> load(Path file) throws Exception {
        try (InputStream in = Files.newInputStream(file)) {
            return client.load(in).items();
        }
    }

    static <T> List<T> of(List<HasMetadata> objects, Class<T> type) {
        return objects.stream().filter(type::isInstance).map(type::cast).toList();
    }

    static <T> T one(List<HasMetadata> objects, Class<T> type) {
        List<T> all = of(objects, type);
        assertEquals(1, all.size(), type.getSimpleName() + "s");
        return all.get(0);
    }

    /** Rules as (group, resource) to verbs; a group or resource listed twice is an error. */
    static Map<String, Set<String>> verbs(List<PolicyRule> rules) {
        Map<String, Set<String>> out = new TreeMap<>();
        for (PolicyRule r : rules) {
            for (String g : r.getApiGroups()) {
                for (String res : r.getResources()) {
                    String key = (g.isEmpty() ? "core" : g) + " " + res;
                    assertTrue(out.put(key, new TreeSet<>(r.getVerbs())) == null, key + " is listed twice");
                    assertFalse(r.getVerbs().contains("*") || g.equals("*") || res.equals("*"), "no wildcard: " + key);
                }
            }
            assertTrue(r.getResourceNames() == null || r.getResourceNames().isEmpty());
            assertTrue(r.getNonResourceURLs() == null || r.getNonResourceURLs().isEmpty());
        }
        return out;
    }

    static Container allocator(Deployment d) {
        return d.getSpec().getTemplate().getSpec().getContainers().get(0);
    }

    static String flag(List<String> command, String name) {
        return command.stream().filter(a -> a.startsWith(name + "=")).map(a -> a.substring(name.length() + 1)).findFirst().orElse(null);
    }

    @Test
    void theRolesGiveExactlyWhatTheAllocatorNeeds() throws Exception {
        List<HasMetadata> objects = load(DEPLOY.resolve("allocator.yaml"));
        assertEquals(CLUSTER_ROLE, verbs(one(objects, ClusterRole.class).getRules()));
        Deployment d = one(objects, Deployment.class);
        String namespace = d.getMetadata().getNamespace();
        Role lease = one(objects, Role.class);
        assertEquals(namespace, lease.getMetadata().getNamespace(), "the Lease is in the replicas' namespace ($POD_NAMESPACE)");
        assertEquals(LEASE_ROLE, verbs(lease.getRules()));
        String account = d.getSpec().getTemplate().getSpec().getServiceAccountName();
        ClusterRoleBinding crb = one(objects, ClusterRoleBinding.class);
        RoleBinding rb = one(objects, RoleBinding.class);
        assertEquals("ClusterRole/" + one(objects, ClusterRole.class).getMetadata().getName(),
                crb.getRoleRef().getKind() + "/" + crb.getRoleRef().getName());
        assertEquals("Role/" + lease.getMetadata().getName(), rb.getRoleRef().getKind() + "/" + rb.getRoleRef().getName());
        for (var subjects : List.of(crb.getSubjects(), rb.getSubjects())) {
            assertEquals(1, subjects.size());
            assertEquals("ServiceAccount " + namespace + "/" + account,
                    subjects.get(0).getKind() + " " + subjects.get(0).getNamespace() + "/" + subjects.get(0).getName());
        }
        var sa = one(objects, io.fabric8.kubernetes.api.model.ServiceAccount.class);
        assertEquals(namespace + "/" + account, sa.getMetadata().getNamespace() + "/" + sa.getMetadata().getName());
    }

    @Test
    void theDeploymentsFlagsAreTheAllocatorsAndElectALeaderWithReplicas(@TempDir Path tmp) throws Exception {
        List<HasMetadata> objects = load(DEPLOY.resolve("allocator.yaml"));
        Deployment d = one(objects, Deployment.class);
        Container c = allocator(d);
        List<String> command = c.getCommand();
        assertEquals(List.of("java", "-jar", "/opt/qgpu/qgpu-dra-allocator.jar"), command.subList(0, 3));
        String dockerfile = Files.readString(DEPLOY.resolve("Dockerfile"));
        assertTrue(dockerfile.contains("COPY target/qgpu-dra-allocator.jar /opt/qgpu/qgpu-dra-allocator.jar"), dockerfile);

        // the flags as the allocator reads them, with the Secret's files stood in for by files here
        String cert = flag(command, "--tls-cert");
        String key = flag(command, "--tls-key");
        Path localCert = Files.writeString(tmp.resolve("tls.crt"), "");
        Path localKey = Files.writeString(tmp.resolve("tls.key"), "");
        List<String> args = new ArrayList<>();
        for (String a : command.subList(3, command.size())) {
            args.add(a.replace(cert, localCert.toString()).replace(key, localKey.toString()));
        }
        AllocatorFlags flags = AllocatorFlags.parse(args.toArray(String[]::new));
        assertTrue(d.getSpec().getReplicas() > 1, "replicas");
        assertTrue(flags.leaderElect(), "more than one replica elect a leader");
        assertEquals(List.of(deviceClassOfTheDriver()), flags.deviceClasses());

        // the TLS files come from the Secret mounted at their directory
        Path dir = Path.of(cert).getParent();
        assertEquals(dir, Path.of(key).getParent());
        VolumeMount mount = c.getVolumeMounts().stream().filter(m -> Path.of(m.getMountPath()).equals(dir)).findFirst().orElseThrow();
        var volume = d.getSpec().getTemplate().getSpec().getVolumes().stream().filter(v -> v.getName().equals(mount.getName()))
                .findFirst().orElseThrow();
        assertNotNull(volume.getSecret(), "the TLS files are a Secret");
        assertEquals(Set.of("tls.crt", "tls.key"), Set.of(Path.of(cert).getFileName().toString(), Path.of(key).getFileName().toString()),
                "the keys of a kubernetes.io/tls Secret");

        // the probes: /healthz over HTTPS on the webhook's port
        int port = flags.webhook().orElseThrow().port();
        for (var probe : List.of(c.getReadinessProbe(), c.getLivenessProbe())) {
            assertEquals(WebhookServer.HEALTH_PATH, probe.getHttpGet().getPath());
            assertEquals("HTTPS", probe.getHttpGet().getScheme());
            assertEquals(port, containerPort(c, probe.getHttpGet().getPort().getStrVal()));
        }
        // the Lease's namespace: the pod's
        assertTrue(c.getEnv().stream().anyMatch(e -> e.getName().equals("POD_NAMESPACE")
                && e.getValueFrom().getFieldRef().getFieldPath().equals("metadata.namespace")));
    }

    static int containerPort(Container c, String name) {
        return c.getPorts().stream().filter(p -> name.equals(p.getName())).map(ContainerPort::getContainerPort).findFirst().orElseThrow();
    }

    /** The DeviceClass the DRA driver's deploy files create. */
    static String deviceClassOfTheDriver() throws Exception {
        DeviceClass dc = one(load(DEPLOY.resolve("../../dra-driver/deploy/deviceclass.yaml")), DeviceClass.class);
        assertEquals(DraNames.DEVICE_CLASS, dc.getMetadata().getName());
        return dc.getMetadata().getName();
    }

    @Test
    void theWebhookReachesTheServersPathOnTheDeploymentsPortAndOnlyForPodCreates() throws Exception {
        MutatingWebhookConfiguration config = one(load(DEPLOY.resolve("webhook.yaml")), MutatingWebhookConfiguration.class);
        assertEquals(1, config.getWebhooks().size());
        MutatingWebhook w = config.getWebhooks().get(0);
        assertEquals("Ignore", w.getFailurePolicy());
        assertEquals("None", w.getSideEffects());
        assertEquals(List.of("v1"), w.getAdmissionReviewVersions());
        assertEquals(5, w.getTimeoutSeconds());
        assertEquals("Never", w.getReinvocationPolicy());
        assertEquals(1, w.getRules().size());
        RuleWithOperations rule = w.getRules().get(0);
        assertEquals(List.of(""), rule.getApiGroups());
        assertEquals(List.of("v1"), rule.getApiVersions());
        assertEquals(List.of("CREATE"), rule.getOperations());
        assertEquals(List.of("pods"), rule.getResources());

        List<HasMetadata> objects = load(DEPLOY.resolve("allocator.yaml"));
        Service service = one(objects, Service.class);
        Deployment d = one(objects, Deployment.class);
        var ref = w.getClientConfig().getService();
        assertEquals(WebhookServer.MUTATE_PATH, ref.getPath());
        assertEquals(service.getMetadata().getNamespace() + "/" + service.getMetadata().getName(), ref.getNamespace() + "/" + ref.getName());
        ServicePort sp = service.getSpec().getPorts().stream().filter(p -> p.getPort().equals(ref.getPort())).findFirst().orElseThrow();
        Container c = allocator(d);
        assertEquals(Integer.parseInt(flag(c.getCommand(), "--webhook-port")), containerPort(c, sp.getTargetPort().getStrVal()),
                "the Service's port leads to --webhook-port");
        assertEquals(d.getSpec().getSelector().getMatchLabels(), service.getSpec().getSelector());

        // neither kube-system nor the allocator's own namespace, and only pods that name claims
        LabelSelectorRequirement ns = w.getNamespaceSelector().getMatchExpressions().get(0);
        assertEquals("kubernetes.io/metadata.name NotIn", ns.getKey() + " " + ns.getOperator());
        assertTrue(ns.getValues().containsAll(List.of("kube-system", d.getMetadata().getNamespace())), ns.getValues().toString());
        assertEquals(1, w.getMatchConditions().size());
        assertEquals("has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0",
                w.getMatchConditions().get(0).getExpression());
        assertTrue(w.getClientConfig().getCaBundle().equals("${CA_BUNDLE}"), "a placeholder the comment says how to fill");
    }

    @Test
    void theTemplatesAreTheAllocatorsAndThePodIsGatedByHand() throws Exception {
        List<ResourceClaimTemplate> templates = of(load(DEPLOY.resolve("claim-templates.yaml")), ResourceClaimTemplate.class);
        assertEquals(4, templates.size());
        Reviews.Claims lookup = new Reviews.Claims();
        for (ResourceClaimTemplate t : templates) {
            assertEquals(java.util.Optional.of(DraNames.DEVICE_CLASS), ClaimScope.used(t.getSpec().getSpec(), Set.of(DraNames.DEVICE_CLASS)),
                    t.getMetadata().getName());
            lookup.add(t);
        }
        var requests = templates.stream().map(t -> t.getSpec().getSpec().getDevices().getRequests().get(0).getExactly()).toList();
        assertEquals("10Gi", requests.get(0).getCapacity().getRequests().get(DraNames.CAPACITY_MEMORY).toString());
        assertEquals("30", requests.get(0).getCapacity().getRequests().get(DraNames.CAPACITY_CORES).toString());
        assertEquals(null, requests.get(1).getCapacity(), "a whole GPU");
        assertEquals(2L, requests.get(2).getCount());
        var config = templates.get(3).getSpec().getSpec().getDevices().getConfig().get(0).getOpaque();
        assertEquals(DraNames.DRIVER, config.getDriver());
        JsonNode parameters = Reviews.JSON.valueToTree(config.getParameters());
        assertEquals("GpuConfig", parameters.path("kind").asText());
        assertEquals("online", parameters.path("priority").asText());

        Pod pod = one(load(DEPLOY.resolve("pod.yaml")), Pod.class);
        assertEquals(List.of(DraNames.SCHEDULING_GATE), pod.getSpec().getSchedulingGates().stream().map(g -> g.getName()).toList());
        // the webhook adds nothing to it; without the hand-written gate it would add it
        AdmissionWebhook webhook = new AdmissionWebhook(new ClaimScope(lookup, List.of(DraNames.DEVICE_CLASS)));
        String json = Reviews.JSON.writeValueAsString(pod);
        JsonNode answer = Reviews.read(webhook.review(Reviews.create(json)));
        assertEquals(null, Reviews.patch(answer));
        assertTrue(answer.path("response").path("status").path("message").asText().startsWith("already gated: template default/"));
        pod.getSpec().setSchedulingGates(List.of());
        String ungated = Reviews.JSON.writeValueAsString(pod);
        assertEquals("[{\"name\":\"" + DraNames.SCHEDULING_GATE + "\"}]",
                Reviews.gatesAfter(ungated, Reviews.read(webhook.review(Reviews.create(ungated)))).toString());
        assertTrue(new String(Files.readAllBytes(DEPLOY.resolve("pod.yaml")), StandardCharsets.UTF_8).contains("--no-webhook"));
    }
}
