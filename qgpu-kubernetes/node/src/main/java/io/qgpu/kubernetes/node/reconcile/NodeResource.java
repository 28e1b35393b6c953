package io.qgpu.kubernetes.node.reconcile;

import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Supplier;

/**
 * One kind of side effect a node agent has on its node (CDI spec files, HAMi-core cache directories, the
 * ResourceSlice, the MPS daemons' set, the device list the kubelet sees), brought into line with the agent's
 * desired state by {@link NodeReconciler}, key by key: every key in {@link #desired()} is {@link #ensure ensured},
 * every key {@link #present()} but not desired is {@link #remove removed}.
 *
 * <p>Both steps must be idempotent: the reconciler runs them again after every change, on a timer and after a
 * failure, and a step that already holds must hold after another call without changing anything that a running
 * container sees (an {@code ensure} that finds the file as wanted leaves it alone).
 *
 * <pre>{@code
 * NodeResource<String> specs = NodeResource.of("cdi-spec",
 *         () -> claims.uids(),                 // desired: one spec per prepared claim
 *         () -> cdi.transientIds(),            // present: the spec files on the node
 *         uid -> cdi.ensure(uid, ...),         // write when missing or different
 *         uid -> cdi.delete(uid));
 * }</pre>
 *
 * @param <K> the key of one side effect (a claim uid, a directory, a GPU UUID)
 *
 * <p>Thread safety: the reconciler calls a resource from one thread at a time; {@link #desired()} must read the
 * agent's state safely (under the agent's own lock or from an immutable snapshot).
 */
public interface NodeResource<K> {

    /** A short name for logs and reports, such as {@code cdi-spec}. */
    String kind();

    /** The keys that must exist now. */
    Set<K> desired();

    /**
     * The keys that exist on the node now, as far as this resource can see; a key present and not desired is
     * removed.
     *
     * @throws Exception when the node (or the API server) cannot be read; the removals wait for the next pass
     */
    Set<K> present() throws Exception;

    /** Makes the key hold as desired; a no-op when it already does. */
    void ensure(K key) throws Exception;

    /** Removes the key's side effect; a no-op when there is none. */
    void remove(K key) throws Exception;

    /** One step on one key. */
    @FunctionalInterface
    interface Step<K> {
        /** Runs the step. */
        void run(K key) throws Exception;
    }

    /** A resource from its four parts. */
    static <K> NodeResource<K> of(String kind, Supplier<Set<K>> desired, Callable<Set<K>> present, Step<K> ensure, Step<K> remove) {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(desired, "desired");
        Objects.requireNonNull(present, "present");
        Objects.requireNonNull(ensure, "ensure");
        Objects.requireNonNull(remove, "remove");
        return new NodeResource<>() {
            @Override
            public String kind() {
                return kind;
            }

            @Override
            public Set<K> desired() {
                return desired.get();
            }

            @Override
            public Set<K> present() throws Exception {
                return present.call();
            }

            @Override
            public void ensure(K key) throws Exception {
                ensure.run(key);
            }

            @Override
            public void remove(K key) throws Exception {
                remove.run(key);
            }

            @Override
            public String toString() {
                return kind;
            }
        };
    }
}
