package io.qgpu.kubernetes.dra;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Ticker;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How to start a {@link DraDriver}; {@link Main} builds it from the command line.
 *
 * @param nodeName           this node's name (ResourceSlice node and pool)
 * @param registrarDir       the kubelet's plugin registrar directory (receives {@value DriverNames#REGISTRATION_SOCKET})
 * @param pluginsDir         the kubelet's plugins directory (the driver serves in {@code pluginsDir/gpu.qgpu.io/})
 * @param cdiRoot            where CDI specs are written
 * @param stateFile          the prepared claims, kept across restarts
 * @param nvmlLibrary        NVML library to load; empty: {@code libnvidia-ml.so.1} from the loader's path
 * @param fakeMachine        with the fake NVML library only: the machine it plays
 * @param rules              granularity rules the claims must meet
 * @param recoverAfter       how long a GPU must go without a critical Xid to be published again
 * @param recoveryCheckEvery how often that is checked; zero: never (tests call {@link DraDriver#health()})
 * @param ticker             the clock of the health recovery (and of the MPS supervisor)
 * @param sharing            the sharing back end that enforces the slices' limits ({@code --sharing} and its flags)
 * @param reconcile          when the driver's reconciler runs its passes and retries (the ticker is its clock)
 * @param staleClaimCheckEvery how often prepared claims are checked against the API server ({@link StaleClaimSweep}),
 *                           once at start and then at this period; zero: never (tests call {@link DraDriver#sweep()})
 * @param bootId             the node's current boot id, stamped into the state file; a state file of another boot
 *                           is not restored; empty: unknown (nothing is checked)
 *
 * <p>Thread safety: immutable.
 */
public record DriverConfig(String nodeName, Path registrarDir, Path pluginsDir, Path cdiRoot, Path stateFile,
                           Optional<Path> nvmlLibrary, Optional<String> fakeMachine, GranularityRules rules,
                           Duration recoverAfter, Duration recoveryCheckEvery, Ticker ticker, SharingOptions sharing,
                           NodeReconciler.Settings reconcile, Duration staleClaimCheckEvery, Optional<String> bootId) {

    public DriverConfig {
        Objects.requireNonNull(nodeName, "nodeName");
        registrarDir = Objects.requireNonNull(registrarDir, "registrarDir").toAbsolutePath();
        pluginsDir = Objects.requireNonNull(pluginsDir, "pluginsDir").toAbsolutePath();
        cdiRoot = Objects.requireNonNull(cdiRoot, "cdiRoot").toAbsolutePath();
        stateFile = Objects.requireNonNull(stateFile, "stateFile").toAbsolutePath();
        Objects.requireNonNull(nvmlLibrary, "nvmlLibrary");
        Objects.requireNonNull(fakeMachine, "fakeMachine");
        Objects.requireNonNull(rules, "rules");
        Objects.requireNonNull(recoverAfter, "recoverAfter");
        Objects.requireNonNull(recoveryCheckEvery, "recoveryCheckEvery");
        Objects.requireNonNull(ticker, "ticker");
        Objects.requireNonNull(sharing, "sharing");
        Objects.requireNonNull(reconcile, "reconcile");
        Objects.requireNonNull(staleClaimCheckEvery, "staleClaimCheckEvery");
        if (staleClaimCheckEvery.isNegative()) {
            throw new IllegalArgumentException("staleClaimCheckEvery = " + staleClaimCheckEvery + ": must not be negative");
        }
        Objects.requireNonNull(bootId, "bootId");
    }

    /**
     * The defaults for a node: the kubelet's standard directories, {@code /var/run/cdi}, the state file
     * {@code state.json} in the driver's plugin directory, the system NVML, qGPU's rules, recovery after
     * five minutes checked every ten seconds, the system clock, no sharing back end, the reconciler's default
     * settings, stale claims checked every ten minutes, the boot id Linux gives.
     */
    public static DriverConfig defaults(String nodeName) {
        Path plugins = Path.of(DriverNames.DEFAULT_PLUGINS_DIR);
        return new DriverConfig(nodeName, Path.of(DriverNames.DEFAULT_REGISTRAR_DIR), plugins,
                Path.of(DriverNames.DEFAULT_CDI_ROOT), defaultStateFile(plugins), Optional.empty(), Optional.empty(),
                GranularityRules.ofDefaults(), Duration.ofMinutes(5), Duration.ofSeconds(10), Ticker.system(), SharingOptions.defaults(),
                NodeReconciler.Settings.defaults(), Duration.ofMinutes(10), DriverStateFile.currentBootId());
    }

    /** {@code pluginsDir/gpu.qgpu.io/state.json}. */
    public static Path defaultStateFile(Path pluginsDir) {
        return pluginsDir.resolve(DraNames.DRIVER).resolve("state.json");
    }

    /** The driver's own directory under the plugins directory. */
    public Path pluginDir() {
        return pluginsDir.resolve(DraNames.DRIVER);
    }

    /** The DRA service socket (the endpoint {@code GetInfo} names). */
    public Path draSocket() {
        return pluginDir().resolve(DriverNames.DRA_SOCKET);
    }

    /** The registration socket the kubelet's plugin watcher finds. */
    public Path registrationSocket() {
        return registrarDir.resolve(DriverNames.REGISTRATION_SOCKET);
    }

    public DriverConfig withDirectories(Path registrar, Path plugins, Path cdi) {
        return new DriverConfig(nodeName, registrar, plugins, cdi, stateFile, nvmlLibrary, fakeMachine, rules, recoverAfter,
                recoveryCheckEvery, ticker, sharing, reconcile, staleClaimCheckEvery, bootId);
    }

    public DriverConfig withStateFile(Path file) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, file, nvmlLibrary, fakeMachine, rules, recoverAfter,
                recoveryCheckEvery, ticker, sharing, reconcile, staleClaimCheckEvery, bootId);
    }

    public DriverConfig withNvml(Optional<Path> library, Optional<String> machine) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, library, machine, rules, recoverAfter,
                recoveryCheckEvery, ticker, sharing, reconcile, staleClaimCheckEvery, bootId);
    }

    public DriverConfig withRules(GranularityRules r) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, nvmlLibrary, fakeMachine, r, recoverAfter,
                recoveryCheckEvery, ticker, sharing, reconcile, staleClaimCheckEvery, bootId);
    }

    public DriverConfig withSharing(SharingOptions s) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, nvmlLibrary, fakeMachine, rules, recoverAfter,
                recoveryCheckEvery, ticker, s, reconcile, staleClaimCheckEvery, bootId);
    }

    public DriverConfig withRecovery(Duration after, Duration checkEvery, Ticker t) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, nvmlLibrary, fakeMachine, rules, after,
                checkEvery, t, sharing, reconcile, staleClaimCheckEvery, bootId);
    }

    public DriverConfig withReconcile(NodeReconciler.Settings r, Duration staleCheckEvery) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, nvmlLibrary, fakeMachine, rules, recoverAfter,
                recoveryCheckEvery, ticker, sharing, r, staleCheckEvery, bootId);
    }

    public DriverConfig withBootId(Optional<String> id) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, nvmlLibrary, fakeMachine, rules, recoverAfter,
                recoveryCheckEvery, ticker, sharing, reconcile, staleClaimCheckEvery, id);
    }
}
