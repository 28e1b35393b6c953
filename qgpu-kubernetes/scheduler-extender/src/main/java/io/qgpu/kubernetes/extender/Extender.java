package io.qgpu.kubernetes.extender;

import java.util.List;

/**
 * The verbs of a kube-scheduler extender (filter, prioritize, bind, preempt), on parsed requests. {@link GpuExtender} implements
 * them with qgpu; {@link ExtenderServer} speaks HTTP and JSON around any implementation.
 *
 * <p>An implementation signals a bad request with {@link BadRequestException} (answered 4xx); any
 * other exception is a bug, answered 500 by the server, which never lets it escape the exchange.
 *
 * <pre>{@code
 * Extender e = new GpuExtender(ledger, PlacementConfig.defaults(), new DemoCluster());
 * ExtenderServer server = ExtenderServer.builder(e).port(8888).urlPrefix("/qgpu").build().start();
 * }</pre>
 *
 * <p>Thread safety: implementations must be thread-safe; the server calls them from its event-loop threads, several at once.
 */
public interface Extender {

    /**
     * The names of the nodes the extender knows, for the request reader: a candidate name found
     * there is handed to {@link #filter} and {@link #prioritize} as the table's own string. By default
     * none (every name is read as sent).
     */
    default NodeNameTable nodeNames() {
        return NodeNameTable.EMPTY;
    }

    /** The {@code filter} verb. */
    ExtenderProtocol.FilterResult filter(ExtenderRequests.Args args);

    /** The {@code prioritize} verb: one entry per candidate node, in request order. */
    List<ExtenderProtocol.HostPriority> prioritize(ExtenderRequests.Args args);

    /** The {@code bind} verb. */
    ExtenderProtocol.BindingResult bind(ExtenderProtocol.BindingArgs args);

    /**
     * Whether {@link #bind} waits on another machine (the API server): then the server runs it on a
     * worker thread instead of the event loop that read it. True by default; the server asks once, when
     * it is built.
     */
    default boolean bindWaitsOnNetwork() {
        return true;
    }

    /**
     * The {@code preempt} verb: of the scheduler's candidate nodes and victims, the nodes where the
     * victims make room, each with the victims actually needed. By default not served (answered 404).
     */
    default ExtenderProtocol.PreemptionResult preempt(ExtenderRequests.PreemptionArgs args) {
        throw new BadRequestException(404, "this extender does not serve the preempt verb");
    }
}
