package io.qgpu.core.internal;

import io.qgpu.api.ClusterView;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The way from a {@code Ledger} to its current {@link NodeFeed} for the other packages of this
 * module (the placement engine's index), without making the feed part of the ledger's exported API.
 * The ledger installs the one accessor when its class is initialised, so any code that holds a
 * ledger finds it installed. Typed on {@link ClusterView}, which the ledger implements, so that this
 * class does not name the ledger back (no import circle; {@code ImportCirclesTest}): only a ledger is
 * ever passed.
 *
 * <p>Not part of the exported API. Thread-safe: the accessor is written once, before any ledger
 * exists, and read through a volatile field.
 */
public final class LedgerFeeds {

    private static volatile @Nullable Function<ClusterView, NodeFeed> access;

    private LedgerFeeds() {}

    /** Called once, by {@code Ledger}'s static initialiser. */
    public static void install(Function<ClusterView, NodeFeed> accessor) {
        if (access != null) {
            throw new IllegalStateException("the ledger's feed accessor is installed already");
        }
        access = accessor;
    }

    /**
     * The ledger's current feed: the same object until a structural change (a node added or
     * removed, a restore, a reconcile) replaces it with a feed of a higher epoch.
     */
    public static NodeFeed of(ClusterView ledger) {   // a Ledger: the only ClusterView that has a feed
        Function<ClusterView, NodeFeed> a = access;
        if (a == null) { // cannot happen: a ledger exists, so its class was initialised
            throw new IllegalStateException("the ledger's feed accessor is not installed");
        }
        return a.apply(ledger);
    }
}
