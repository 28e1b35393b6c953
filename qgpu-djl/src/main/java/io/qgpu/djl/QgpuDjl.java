package io.qgpu.djl;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.inference.streaming.StreamingTranslator;
import ai.djl.translate.Translator;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Validate;
import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateRegistry;
import io.qgpu.core.gate.GateTenantSpec;
import io.qgpu.core.gate.Tenant;
import io.qgpu.core.gate.TenantUsage;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gate for DJL, in one object: a tenant of a GPU's {@link Gate}, and the factories that put DJL
 * predictors and translators under it. In a pod that the device plugin or the DRA driver placed,
 * {@link #fromEnvironment()} needs no configuration: the tenant, its priority and its quota come from
 * {@code QGPU_*} variables ({@link QgpuEnvironment}).
 *
 * <pre>{@code
 * QgpuDjl djl = QgpuDjl.fromEnvironment();                                  // once per process
 * Predictor<float[], float[]> predictor = djl.newPredictor(model, translator);
 * float[] y = predictor.predict(x);                                        // under the tenant's lease
 * }</pre>
 *
 * <p>The gates of {@link #fromEnvironment()} come from {@link #registry()}, one per GPU UUID for the whole
 * process, with the {@code elastic} policy: the request is the tenant's guaranteed share, the limit the most it
 * may use over the gate's 10 s window. Two tenants in one process (an online server next to an offline job)
 * take two {@code QgpuDjl}s of the same gate (for example {@link #create} with a {@link GateTenantSpec} each).
 *
 * <p>Thread safety: thread-safe; the predictors it makes are, like DJL's, for one thread at a time.
 */
public final class QgpuDjl implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(QgpuDjl.class);

    /** Created on first use: a process that never asks for it starts no timer thread. */
    private static final class Registry {
        static final GateRegistry ELASTIC = GateRegistry.create(
                uuid -> GateConfig.custom().policy(IsolationPolicy.ELASTIC).build());
    }

    private final LeaseScope scope;

    private QgpuDjl(Gate gate, Tenant tenant) {
        this.scope = new LeaseScope(gate, tenant);
    }

    /**
     * The process-wide registry of the gates that {@link #fromEnvironment()} uses: one gate per GPU UUID,
     * {@code elastic} policy, default settings otherwise (never closed).
     */
    public static GateRegistry registry() {
        return Registry.ELASTIC;
    }

    /** {@link #fromEnvironment(Map)} of {@link System#getenv()}. */
    public static QgpuDjl fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    /**
     * Registers the tenant that {@code env} describes with the gate of its first visible GPU in
     * {@link #registry()} (the gate {@value QgpuEnvironment#NO_GPU} when none is visible).
     *
     * @throws io.qgpu.api.InvalidValueException naming the variable and its text if a value is bad
     * @throws io.qgpu.core.gate.GateStateException if a tenant of that name is already registered there
     */
    public static QgpuDjl fromEnvironment(Map<String, String> env) {
        return fromEnvironment(QgpuEnvironment.from(env), registry(), 0);
    }

    /**
     * Registers the tenant that {@code env} describes with the gate, in {@code gates}, of visible GPU
     * {@code deviceIndex}.
     */
    public static QgpuDjl fromEnvironment(QgpuEnvironment env, GateRegistry gates, int deviceIndex) {
        Validate.notNull("env", env);
        Validate.notNull("gates", gates);
        Gate gate = gates.gate(env.gpu(deviceIndex));
        QgpuDjl djl = create(gate, env.tenantSpec());
        LOG.info("qgpu gate for DJL: tenant {} ({}, request {}%, limit {}%) on {}", env.tenant(),
                env.priority().wireName(), env.computeRequest(), env.computeLimit(), gate.gpu());
        return djl;
    }

    /** Registers a tenant with {@code gate}. */
    public static QgpuDjl create(Gate gate, GateTenantSpec spec) {
        Validate.notNull("gate", gate);
        return new QgpuDjl(gate, gate.register(Validate.notNull("spec", spec)));
    }

    /**
     * Uses a tenant already registered with its gate. Make one {@code QgpuDjl} per tenant and share it: the
     * one-lease-per-thread rule (a prediction inside a session uses the session's lease) holds within one
     * {@code QgpuDjl}, and two of the same tenant would each acquire a lease on the same thread.
     */
    public static QgpuDjl of(Tenant tenant) {
        Validate.notNull("tenant", tenant);
        return new QgpuDjl(tenant.gate(), tenant);
    }

    public Gate gate() {
        return scope.gate();
    }

    public Tenant tenant() {
        return scope.tenant();
    }

    /** The tenant's use of the GPU now, as its gate counts it. */
    public TenantUsage usage() {
        return scope.gate().usage(scope.tenant());
    }

    /**
     * A predictor of {@code model} on the model's device whose predictions run under the tenant's leases. A
     * {@link StreamingTranslator} is gated step by step ({@link GatedStreamingTranslator}).
     */
    public <I, O> GatedPredictor<I, O> newPredictor(Model model, Translator<I, O> translator) {
        return newPredictor(model, translator, model.getNDManager().getDevice());
    }

    /** As {@link #newPredictor(Model, Translator)}, on {@code device}. */
    public <I, O> GatedPredictor<I, O> newPredictor(Model model, Translator<I, O> translator, Device device) {
        Validate.notNull("model", model);
        Validate.notNull("translator", translator);
        if (translator instanceof StreamingTranslator<I, O> st) {
            // the steps of a stream are gated by the translator; the predictor gates predict and batchPredict,
            // and the translator's own entry nests in the predictor's lease there
            GatedStreamingTranslator<I, O> gated = new GatedStreamingTranslator<>(st, scope);
            return new GatedPredictor<>(model, model.newPredictor(gated, device), scope, true);
        }
        return new GatedPredictor<>(model, model.newPredictor(translator, device), scope, false);
    }

    /**
     * Wraps a predictor that exists already (any engine's) so that its predictions run under the tenant's
     * leases; {@code model} is the model it predicts with. Its stream is not offered
     * ({@link GatedPredictor#streamingPredict} refuses it): to stream under the gate, build the predictor with
     * {@link #newPredictor}, or with a translator from {@link #translator} and use that predictor as it is.
     */
    public <I, O> GatedPredictor<I, O> wrap(Model model, Predictor<I, O> predictor) {
        Validate.notNull("model", model);
        Validate.notNull("predictor", predictor);
        return new GatedPredictor<>(model, predictor, scope, false);
    }

    /**
     * The translator-level hook: {@code translator} with every prediction's forward pass under the tenant's
     * lease; a {@link GatedStreamingTranslator} if it streams.
     */
    public <I, O> GatedTranslator<I, O> translator(Translator<I, O> translator) {
        Validate.notNull("translator", translator);
        if (translator instanceof StreamingTranslator<I, O> st) {
            return new GatedStreamingTranslator<>(st, scope);
        }
        return new GatedTranslator<>(translator, scope);
    }

    /**
     * Opens a session on this thread: one lease for many predictions, each checkpointing it first (see
     * {@link GateSession}). Nested in this thread's open session, if any.
     *
     * @throws InterruptedException if interrupted while waiting at the gate (no lease is left behind)
     */
    public GateSession openSession() throws InterruptedException {
        return scope.enter();
    }

    /**
     * Unregisters the tenant from its gate (the gate itself stays: it belongs to its registry).
     *
     * @throws io.qgpu.core.gate.GateStateException if the tenant still has open leases or waiting acquires
     */
    @Override
    public void close() {
        if (!scope.gate().isClosed() && scope.gate().tenants().contains(scope.tenant())) {
            scope.gate().unregister(scope.tenant());
        }
    }
}
