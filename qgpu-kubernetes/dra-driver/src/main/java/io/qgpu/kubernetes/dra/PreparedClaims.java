package io.qgpu.kubernetes.dra;

import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import io.qgpu.kubernetes.node.CdiSpecs;
import io.qgpu.kubernetes.node.ContainerEdits;
import io.qgpu.kubernetes.node.PlacementEdits;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's ledger of prepared claims: reserves each claim's placement in qgpu's {@link Ledger}, writes
 * its CDI spec, and keeps the whole set in the {@link ClaimStore} before the kubelet is answered.
 *
 * <p>A prepare of a claim already prepared answers the same devices and reserves nothing more. A claim
 * the ledger refuses (it does not fit what is left on its GPUs, or breaks the granularity rules) changes
 * nothing. An unprepare releases the reservation, saves, then removes the CDI spec; an unknown claim is
 * a success. {@link #restore()} rebuilds the reservations from the store after a restart, writes back
 * CDI specs that are missing and removes specs of claims the store does not hold (left by a crash
 * between writing the spec and saving).
 *
 * <pre>{@code
 * PreparedClaims claims = new PreparedClaims(ledger, new DriverStateFile(file, node), new CdiSpecs(cdiRoot), edits);
 * claims.restore();
 * PreparedClaim done = claims.prepare(plan);       // devices with their CDI ids
 * claims.unprepare(plan.uid());
 * }</pre>
 *
 * <p>Thread safety: thread-safe. Every method holds this object's lock, so that the reservation, the spec
 * and the saved set change together: without it two prepares could each save a set missing the other's
 * claim, and after a restart the ledger would forget a reservation and admit more than the GPU holds
 * ({@code ConcurrentPrepareTest} fails that way with the lock removed).
 */
final class PreparedClaims {
    private static final Logger LOG = LoggerFactory.getLogger(PreparedClaims.class);

    private final Ledger ledger;
    private final ClaimStore store;
    private final CdiSpecs cdi;
    private final PlacementEdits edits;
    private final Map<String, PreparedClaim> byUid = new LinkedHashMap<>();

    PreparedClaims(Ledger ledger, ClaimStore store, CdiSpecs cdi, PlacementEdits edits) {
        this.ledger = ledger;
        this.store = store;
        this.cdi = cdi;
        this.edits = edits;
    }

    /** Why a claim was not prepared, in words for the kubelet's per-claim error. */
    static final class RefusedException extends Exception {
        private static final long serialVersionUID = 1L;

        RefusedException(String message) {
            super(message);
        }
    }

    /** Rebuilds the reservations and CDI specs of the saved claims; call once before serving. */
    synchronized void restore() {
        List<PreparedClaim> saved = store.load().orElse(List.of());
        for (PreparedClaim c : saved) {
            ReserveResult r = ledger.reserve(c.placement());
            if (r instanceof ReserveResult.Refused f) {
                // kept, so that its unprepare still finds it; its GPUs are no longer what they were
                LOG.error("prepared claim {} ({}) cannot be reserved again: {}", c.key(), c.uid(), f.summary());
            }
            byUid.put(c.uid(), c);
            if (!Files.exists(cdi.file(c.uid()))) {
                writeSpec(c, false);
            }
        }
        removeOrphanSpecs();
        LOG.info("{} prepared claim(s) restored", byUid.size());
    }

    /** The prepared claim with this uid. */
    synchronized Optional<PreparedClaim> get(String uid) {
        return Optional.ofNullable(byUid.get(uid));
    }

    /** Every prepared claim, oldest first. */
    synchronized List<PreparedClaim> all() {
        return List.copyOf(byUid.values());
    }

    /**
     * Prepares a claim: the same answer again if it is prepared already.
     *
     * @param plan the claim with its placement and devices (CDI ids not yet set)
     * @return the claim as prepared, its devices with their CDI ids
     * @throws RefusedException when the ledger refuses the placement
     */
    synchronized PreparedClaim prepare(PreparedClaim plan) throws RefusedException {
        PreparedClaim done = byUid.get(plan.uid());
        if (done != null) {
            return done;
        }
        ReserveResult r = ledger.reserve(plan.placement());
        if (r instanceof ReserveResult.Refused f) {
            throw new RefusedException("does not fit: " + f.summary());
        }
        PreparedClaim prepared;
        try {
            prepared = writeSpec(plan, true);
            byUid.put(prepared.uid(), prepared);
            store.save(List.copyOf(byUid.values()));
        } catch (RuntimeException e) {
            byUid.remove(plan.uid());
            ledger.release(plan.uid());
            cdi.delete(plan.uid());
            throw e;
        }
        return prepared;
    }

    /**
     * Unprepares a claim: releases its share, saves, removes its CDI spec.
     *
     * @return whether it was prepared
     */
    synchronized boolean unprepare(String uid) {
        PreparedClaim c = byUid.remove(uid);
        if (c == null) {
            return false;
        }
        ledger.release(uid);
        try {
            store.save(List.copyOf(byUid.values()));
        } catch (RuntimeException e) {
            byUid.put(uid, c);
            ledger.reserve(c.placement());
            throw e;
        }
        cdi.delete(uid);
        return true;
    }

    /**
     * Writes the claim's CDI spec: the placement's common edits once (with the node's sharing back end's, the
     * claim's uid naming its container), each device's GPU edits per device.
     *
     * @param createHostDirectories whether to create the back end's host directories first (at prepare; not at a
     *                              restore, where a fresh one would be emptied under a running container)
     */
    private PreparedClaim writeSpec(PreparedClaim c, boolean createHostDirectories) {
        PlacementEdits.Edits e = edits.edits(c.placement(), c.uid());
        if (createHostDirectories) {
            e.createHostDirectories();
        }
        List<CdiSpecs.Device> specDevices = new ArrayList<>();
        for (PreparedClaim.Device d : c.devices()) {
            ContainerEdits own = e.perGpu().getOrDefault(d.gpuUuid(), ContainerEdits.EMPTY);
            specDevices.add(new CdiSpecs.Device(DriverNames.cdiDeviceName(c.uid(), d.device()), own));
        }
        List<String> ids = cdi.write(c.uid(), e.common(), specDevices);
        List<PreparedClaim.Device> withIds = new ArrayList<>();
        for (int i = 0; i < c.devices().size(); i++) {
            withIds.add(c.devices().get(i).withCdiIds(List.of(ids.get(i))));
        }
        return c.withDevices(withIds);
    }

    private void removeOrphanSpecs() {
        String prefix = CdiSpecs.KIND.replace('/', '-') + "_";
        try (DirectoryStream<Path> files = Files.newDirectoryStream(cdi.root(), prefix + "*.json")) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                String uid = name.substring(prefix.length(), name.length() - ".json".length());
                if (!byUid.containsKey(uid)) {
                    LOG.info("removing CDI spec {} of a claim that was never answered", f);
                    Files.deleteIfExists(f);
                }
            }
        } catch (java.nio.file.NoSuchFileException e) {
            // no CDI root yet: nothing to remove
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the CDI root " + cdi.root() + ": " + e.getMessage(), e);
        }
    }
}
