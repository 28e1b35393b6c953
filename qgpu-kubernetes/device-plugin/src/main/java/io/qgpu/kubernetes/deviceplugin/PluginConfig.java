package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Ticker;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How to start a {@link DevicePlugin}; {@link Main} builds it from the command line.
 *
 * @param pluginDir          the kubelet's device plugin directory (holds {@code kubeletSocket}, receives {@code endpoint})
 * @param kubeletSocket      file name of the kubelet's socket in {@code pluginDir}
 * @param endpoint           file name of the plugin's socket in {@code pluginDir}
 * @param nvmlLibrary        NVML library to load; empty: {@code libnvidia-ml.so.1} from the loader's path
 * @param fakeMachine        with the fake NVML library only: the machine it plays
 * @param nodeName           the node's name (the extender's {@code qgpu.io/node})
 * @param stateFile          where the allocations are kept across restarts
 * @param rules              granularity rules: how many virtual ids each GPU gets
 * @param slotMemoryBytes    memory per GPU of an allocation the plugin decides itself
 * @param recoverAfter       how long a GPU must go without a critical Xid to be healthy again
 * @param recoveryCheckEvery how often that is checked; zero: never (tests call {@link io.qgpu.kubernetes.node.GpuHealth#recoverDue()})
 * @param ticker             the clock of the health recovery
 * @param decisions          where the extender's decisions come from
 * @param sharing            the sharing back end that enforces the slices' limits ({@code --sharing} and its flags)
 * @param reconcile          the plugin's reconciler: its period and back-off on {@code ticker} ({@link NodeReconciler.Settings})
 * @param reconcileOnTimer   whether the reconciler runs on the plugin's timer (every {@code reconcile.period()}, and
 *                           soon after each trigger); false: only the pass at start, and tests call
 *                           {@link DevicePlugin#reconciler()}{@code .reconcile()} themselves
 *
 * <p>Thread safety: immutable.
 */
public record PluginConfig(Path pluginDir, String kubeletSocket, String endpoint, Optional<Path> nvmlLibrary,
                           Optional<String> fakeMachine, String nodeName, Path stateFile, GranularityRules rules,
                           long slotMemoryBytes, Duration recoverAfter, Duration recoveryCheckEvery, Ticker ticker,
                           PodDecisions decisions, SharingOptions sharing, NodeReconciler.Settings reconcile,
                           boolean reconcileOnTimer) {

    public PluginConfig {
        Objects.requireNonNull(pluginDir, "pluginDir");
        Objects.requireNonNull(kubeletSocket, "kubeletSocket");
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(nvmlLibrary, "nvmlLibrary");
        Objects.requireNonNull(fakeMachine, "fakeMachine");
        Objects.requireNonNull(nodeName, "nodeName");
        Objects.requireNonNull(stateFile, "stateFile");
        Objects.requireNonNull(rules, "rules");
        Objects.requireNonNull(recoverAfter, "recoverAfter");
        Objects.requireNonNull(recoveryCheckEvery, "recoveryCheckEvery");
        Objects.requireNonNull(ticker, "ticker");
        Objects.requireNonNull(decisions, "decisions");
        Objects.requireNonNull(sharing, "sharing");
        Objects.requireNonNull(reconcile, "reconcile");
    }

    /**
     * The defaults for a directory: {@code kubelet.sock}, {@code qgpu.sock}, the system NVML, node name
     * {@code local}, the state file {@code qgpu-device-plugin-state.json} beside the directory (the
     * kubelet empties the directory when it starts), qGPU's rules, slots of the rules' tenant slot size
     * (4 GiB), recovery after 5 minutes checked every 10 seconds, the system clock, no extender, no sharing
     * back end, a reconciler pass every 10 seconds on the timer (retries after 0.5 s doubling to 30 s:
     * {@link NodeReconciler.Settings#defaults()}).
     */
    public static PluginConfig defaults(Path pluginDir) {
        Path dir = pluginDir.toAbsolutePath();
        Path state = (dir.getParent() == null ? dir : dir.getParent()).resolve("qgpu-device-plugin-state.json");
        GranularityRules rules = GranularityRules.ofDefaults();
        return new PluginConfig(dir, Names.KUBELET_SOCKET, Names.PLUGIN_SOCKET, Optional.empty(), Optional.empty(), "local",
                state, rules, slotBytes(rules), Duration.ofMinutes(5), Duration.ofSeconds(10), Ticker.system(),
                PodDecisions.none(), SharingOptions.defaults(), NodeReconciler.Settings.defaults(), true);
    }

    /** The memory of one tenant slot under these rules: the slot size, else the smallest request. */
    public static long slotBytes(GranularityRules rules) {
        return rules.memoryPerTenantSlotBytes() > 0 ? rules.memoryPerTenantSlotBytes() : Math.max(GpuDevice.MIB, rules.minMemoryBytes());
    }

    public PluginConfig withNvml(Optional<Path> library, Optional<String> machine) {
        return new PluginConfig(pluginDir, kubeletSocket, endpoint, library, machine, nodeName, stateFile, rules,
                slotMemoryBytes, recoverAfter, recoveryCheckEvery, ticker, decisions, sharing, reconcile, reconcileOnTimer);
    }

    public PluginConfig withNode(String name) {
        return new PluginConfig(pluginDir, kubeletSocket, endpoint, nvmlLibrary, fakeMachine, name, stateFile, rules,
                slotMemoryBytes, recoverAfter, recoveryCheckEvery, ticker, decisions, sharing, reconcile, reconcileOnTimer);
    }

    public PluginConfig withStateFile(Path file) {
        return new PluginConfig(pluginDir, kubeletSocket, endpoint, nvmlLibrary, fakeMachine, nodeName, file, rules,
                slotMemoryBytes, recoverAfter, recoveryCheckEvery, ticker, decisions, sharing, reconcile, reconcileOnTimer);
    }

    public PluginConfig withRules(GranularityRules r) {
        return new PluginConfig(pluginDir, kubeletSocket, endpoint, nvmlLibrary, fakeMachine, nodeName, stateFile, r,
                slotBytes(r), recoverAfter, recoveryCheckEvery, ticker, decisions, sharing, reconcile, reconcileOnTimer);
    }

    public PluginConfig withRecovery(Duration after, Duration checkEvery, Ticker t) {
        return new PluginConfig(pluginDir, kubeletSocket, endpoint, nvmlLibrary, fakeMachine, nodeName, stateFile, rules,
                slotMemoryBytes, after, checkEvery, t, decisions, sharing, reconcile, reconcileOnTimer);
    }

    public PluginConfig withSharing(SharingOptions s) {
        return new PluginConfig(pluginDir, kubeletSocket, endpoint, nvmlLibrary, fakeMachine, nodeName, stateFile, rules,
                slotMemoryBytes, recoverAfter, recoveryCheckEvery, ticker, decisions, s, reconcile, reconcileOnTimer);
    }

    /** The reconciler on the timer with these settings (its period and back-off). */
    public PluginConfig withReconcile(NodeReconciler.Settings s) {
        return new PluginConfig(pluginDir, kubeletSocket, endpoint, nvmlLibrary, fakeMachine, nodeName, stateFile, rules,
                slotMemoryBytes, recoverAfter, recoveryCheckEvery, ticker, decisions, sharing, s, true);
    }

    /**
     * The reconciler's period on the timer; zero: no timer passes (only the pass at start; tests call
     * {@code reconciler().reconcile()} after moving their ticker). The back-off stays as it is.
     */
    public PluginConfig withReconcileEvery(Duration every) {
        Objects.requireNonNull(every, "every");
        if (every.isNegative()) {
            throw new IllegalArgumentException("reconcileEvery = " + every + ": must not be negative");
        }
        if (every.isZero()) {
            return new PluginConfig(pluginDir, kubeletSocket, endpoint, nvmlLibrary, fakeMachine, nodeName, stateFile, rules,
                    slotMemoryBytes, recoverAfter, recoveryCheckEvery, ticker, decisions, sharing, reconcile, false);
        }
        return withReconcile(new NodeReconciler.Settings(every, reconcile.initialBackoff(), reconcile.maxBackoff()));
    }

    /** How often the reconciler runs on the timer; zero when it does not. */
    public Duration reconcileEvery() {
        return reconcileOnTimer ? reconcile.period() : Duration.ZERO;
    }

    public PluginConfig withDecisions(PodDecisions d) {
        return new PluginConfig(pluginDir, kubeletSocket, endpoint, nvmlLibrary, fakeMachine, nodeName, stateFile, rules,
                slotMemoryBytes, recoverAfter, recoveryCheckEvery, ticker, d, sharing, reconcile, reconcileOnTimer);
    }
}
