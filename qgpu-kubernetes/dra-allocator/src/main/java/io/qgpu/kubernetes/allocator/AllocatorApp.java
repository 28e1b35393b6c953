package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimTemplate;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.qgpu.kubernetes.extender.LeaderElection;
import java.net.InetSocketAddress;
import java.net.InetAddress;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The allocator's parts started together, as {@link Main} runs them: the {@link DraAllocator} with the policy and
 * rules of the flags, the {@link AllocatorController} on the cluster, the Lease when {@code --leader-elect} (the
 * extender's {@link LeaderElection}: passes run on the holder only; the informers and the webhook on every replica),
 * and the admission webhook's HTTPS server unless {@code --no-webhook}. Whatever started is stopped, newest first,
 * when a later part fails to start and at {@link #close}.
 *
 * <pre>{@code
 * try (AllocatorApp app = AllocatorApp.start(AllocatorFlags.parse("--no-webhook"), client, System.getenv())) {
 *     app.awaitClose();
 * }
 * }</pre>
 *
 * <p>Thread safety: {@link #start} and {@link #close} are for one thread; {@link #close} may be called from a shutdown
 * hook while another thread waits in {@link #awaitClose}.
 */
public final class AllocatorApp implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AllocatorApp.class);
    /** The Lease the replicas share. */
    public static final String LEASE_NAME = "qgpu-dra-allocator";
    /** How long the informers may take to list the cluster at start. */
    static final Duration SYNC_TIMEOUT = Duration.ofSeconds(60);

    private final AllocatorController controller;
    private final LeaderElection election;
    private final SharedIndexInformer<ResourceClaimTemplate> templates;
    private final WebhookServer webhook;
    private final CountDownLatch closed = new CountDownLatch(1);

    private AllocatorApp(AllocatorController controller, LeaderElection election,
                         SharedIndexInformer<ResourceClaimTemplate> templates, WebhookServer webhook) {
        this.controller = controller;
        this.election = election;
        this.templates = templates;
        this.webhook = webhook;
    }

    /**
     * Starts every part.
     *
     * @param env the environment ({@code POD_NAMESPACE}, {@code HOSTNAME} for the Lease)
     * @throws TimeoutException when the informers do not list the cluster within {@link #SYNC_TIMEOUT}
     */
    public static AllocatorApp start(AllocatorFlags flags, KubernetesClient client, Map<String, String> env) throws Exception {
        DraAllocator allocator = DraAllocator.create(new LinkedHashSet<>(flags.deviceClasses()), flags.rules(),
                flags.placementConfig(), new ClaimPriority());
        LeaderElection[] election = new LeaderElection[1];
        AllocatorController controller = new AllocatorController(client, allocator, slices -> {
            SliceInventory inv = SliceInventory.of(slices);
            inv.problems().forEach(p -> LOG.warn("ResourceSlices: {}", p));
            return inv.nodes();
        }, () -> election[0] == null || election[0].leading());
        SharedIndexInformer<ResourceClaimTemplate> templates = null;
        WebhookServer server = null;
        try {
            controller.start(SYNC_TIMEOUT);
            if (flags.leaderElect()) {
                String identity = Optional.ofNullable(env.get("HOSTNAME")).filter(h -> !h.isBlank())
                        .orElseGet(AllocatorApp::hostName);
                election[0] = new LeaderElection(client, new LeaderElection.Settings(flags.leaseNamespace(env), LEASE_NAME,
                        identity, LeaderElection.Settings.DEFAULT_LEASE_DURATION, LeaderElection.Settings.DEFAULT_RENEW_DEADLINE,
                        LeaderElection.Settings.DEFAULT_RETRY_PERIOD), controller::pass);
                election[0].start();
            }
            if (flags.webhook().isPresent()) {
                AllocatorFlags.Webhook w = flags.webhook().get();
                templates = client.resources(ResourceClaimTemplate.class).inAnyNamespace().runnableInformer(0);
                templates.start().toCompletableFuture().get(SYNC_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                ClaimScope scope = new ClaimScope(new InformerClaimLookup(controller.claimStore(), templates.getStore()),
                        flags.deviceClasses());
                server = WebhookServer.start(new InetSocketAddress(w.port()), w.tlsCert(), w.tlsKey(), new AdmissionWebhook(scope));
                LOG.info("admission webhook on port {}", server.port());
            }
        } catch (Exception | Error e) {
            if (server != null) {
                server.close();
            }
            if (templates != null) {
                templates.close();
            }
            if (election[0] != null) {
                election[0].close();
            }
            controller.close();
            throw e;
        }
        LOG.info("allocating the claims of device class(es) {} with policy {} under the {} rules{}", flags.deviceClasses(),
                flags.policy(), flags.rules().name(), flags.leaderElect() ? " while this replica holds the Lease" : "");
        return new AllocatorApp(controller, election[0], templates, server);
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (java.net.UnknownHostException e) {
            return "qgpu-dra-allocator-" + ProcessHandle.current().pid();
        }
    }

    /** The webhook's port, when it runs. */
    public Optional<Integer> webhookPort() {
        return Optional.ofNullable(webhook).map(WebhookServer::port);
    }

    /** The controller (tests wait on its passes). */
    AllocatorController controller() {
        return controller;
    }

    /** Blocks until {@link #close}. */
    public void awaitClose() throws InterruptedException {
        closed.await();
    }

    /** Stops the webhook, the Lease, the informers and the worker, newest first; a second call does nothing. */
    @Override
    public synchronized void close() {
        if (closed.getCount() == 0) {
            return;
        }
        if (webhook != null) {
            webhook.close();
        }
        if (templates != null) {
            templates.close();
        }
        if (election != null) {
            election.close();
        }
        controller.close();
        closed.countDown();
    }
}
