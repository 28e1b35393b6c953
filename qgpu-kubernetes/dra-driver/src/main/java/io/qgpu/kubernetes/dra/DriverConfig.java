package io.qgpu.kubernetes.dra;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Ticker;
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
 *
 * <p>Thread safety: immutable.
 */
public record DriverConfig(String nodeName, Path registrarDir, Path pluginsDir, Path cdiRoot, Path stateFile,
                           Optional<Path> nvmlLibrary, Optional<String> fakeMachine, GranularityRules rules,
                           Duration recoverAfter, Duration recoveryCheckEvery, Ticker ticker, SharingOptions sharing) {

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
    }

    /**
     * The defaults for a node: the kubelet's standard directories, {@code /var/run/cdi}, the state file
     * {@code state.json} in the driver's plugin directory, the system NVML, qGPU's rules, recovery after
     * five minutes checked every ten seconds, the system clock, no sharing back end.
     */
    public static DriverConfig defaults(String nodeName) {
        Path plugins = Path.of(DriverNames.DEFAULT_PLUGINS_DIR);
        return new DriverConfig(nodeName, Path.of(DriverNames.DEFAULT_REGISTRAR_DIR), plugins,
                Path.of(DriverNames.DEFAULT_CDI_ROOT), defaultStateFile(plugins), Optional.empty(), Optional.empty(),
                GranularityRules.ofDefaults(), Duration.ofMinutes(5), Duration.ofSeconds(10), Ticker.system(), SharingOptions.defaults());
    }

    /** {@code pluginsDir/gpu.qgpu.io/state.json}. */
    public static Path defaultStateFile(Path pluginsDir) {
        return pluginsDir.resolve(DriverNames.DRIVER).resolve("state.json");
    }

    /** The driver's own directory under the plugins directory. */
    public Path pluginDir() {
        return pluginsDir.resolve(DriverNames.DRIVER);
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
                recoveryCheckEvery, ticker, sharing);
    }

    public DriverConfig withStateFile(Path file) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, file, nvmlLibrary, fakeMachine, rules, recoverAfter,
                recoveryCheckEvery, ticker, sharing);
    }

    public DriverConfig withNvml(Optional<Path> library, Optional<String> machine) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, library, machine, rules, recoverAfter,
                recoveryCheckEvery, ticker, sharing);
    }

    public DriverConfig withRules(GranularityRules r) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, nvmlLibrary, fakeMachine, r, recoverAfter,
                recoveryCheckEvery, ticker, sharing);
    }

    public DriverConfig withSharing(SharingOptions s) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, nvmlLibrary, fakeMachine, rules, recoverAfter,
                recoveryCheckEvery, ticker, s);
    }

    public DriverConfig withRecovery(Duration after, Duration checkEvery, Ticker t) {
        return new DriverConfig(nodeName, registrarDir, pluginsDir, cdiRoot, stateFile, nvmlLibrary, fakeMachine, rules, after,
                checkEvery, t, sharing);
    }
}
