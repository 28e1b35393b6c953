package io.qgpu.kubernetes.node.reconcile;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one way a node agent answers the kubelet ({@code Allocate}, {@code NodePrepareResources}): every step
 * that changes something registers its undo as it succeeds; {@link #commit()} comes right before the answer;
 * a transaction closed without it (any step threw) undoes every registered step, newest first. So nothing a
 * failed answer reserved, saved or wrote outlives it.
 *
 * <pre>{@code
 * try (NodeTransaction tx = NodeTransaction.begin("prepare claim " + uid)) {
 *     if (ledger.reserve(placement) instanceof ReserveResult.Refused f) {
 *         throw new RefusedException(f.summary());
 *     }
 *     tx.undo("release " + uid, () -> ledger.release(uid));
 *     claims.put(uid, prepared);
 *     tx.undo("forget " + uid, () -> claims.remove(uid));
 *     store.save(claims.values());                       // undone by saving again after the undos above
 *     reconciler.ensureNow(cdiSpecs, List.of(uid));      // the side effects, before the answer
 *     tx.commit();
 * }                                                       // not committed: undone, newest first
 * }</pre>
 *
 * <p>A step that may change something and still throw (a save that wrote the file and then failed to force
 * it, a mark written before the API server's answer was lost) registers its undo <em>before</em> it runs, so
 * that the undo also covers its half-done case; a step that either fully happens or not at all registers it
 * after.
 *
 * <p>An undo that throws is logged; the others still run, and the failures reach the caller as an
 * {@link UndoFailedException} from {@link #close()}, which a try-with-resources block adds as suppressed to the
 * exception that stopped the transaction. What an undo could not take back is left to the agent's
 * {@link NodeReconciler}, which removes side effects that are no longer desired.
 *
 * <p>Thread safety: not thread-safe; one transaction belongs to one call, under the agent's lock.
 */
public final class NodeTransaction implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NodeTransaction.class);

    /** Undos that failed while a transaction was rolled back. */
    public static final class UndoFailedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UndoFailedException(String message) {
            super(message);
        }
    }

    private record Undo(String step, Runnable action) {
    }

    private final String what;
    private final Deque<Undo> undos = new ArrayDeque<>();
    private boolean committed;
    private boolean closed;

    private NodeTransaction(String what) {
        this.what = what;
    }

    /** A transaction named for the logs ({@code "prepare claim ns/name (uid)"}). */
    public static NodeTransaction begin(String what) {
        return new NodeTransaction(Objects.requireNonNull(what, "what"));
    }

    /** Registers the undo of a step that has just succeeded. */
    public void undo(String step, Runnable action) {
        if (committed || closed) {
            throw new IllegalStateException(what + ": no step after the commit (" + step + ")");
        }
        undos.push(new Undo(Objects.requireNonNull(step, "step"), Objects.requireNonNull(action, "action")));
    }

    /** Marks every step as kept; call right before answering. */
    public void commit() {
        if (closed) {
            throw new IllegalStateException(what + ": already closed");
        }
        committed = true;
        undos.clear();
    }

    /** Whether {@link #commit()} was called. */
    public boolean committed() {
        return committed;
    }

    /**
     * Without a commit: undoes every registered step, newest first.
     *
     * @throws UndoFailedException naming each undo that threw (all were attempted)
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (committed) {
            return;
        }
        UndoFailedException failed = null;
        while (!undos.isEmpty()) {
            Undo u = undos.pop();
            try {
                u.action().run();
            } catch (RuntimeException e) {
                LOG.error("{}: rolling back, '{}' failed; left to the reconciler: {}", what, u.step(), e.getMessage());
                if (failed == null) {
                    failed = new UndoFailedException(what + ": rolling back, '" + u.step() + "' failed: " + e.getMessage());
                }
                failed.addSuppressed(e);
            }
        }
        if (failed != null) {
            throw failed;
        }
        LOG.debug("{}: rolled back", what);
    }
}
