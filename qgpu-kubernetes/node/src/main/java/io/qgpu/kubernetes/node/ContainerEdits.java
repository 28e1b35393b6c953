package io.qgpu.kubernetes.node;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a container runtime must change in a container: environment variables, device nodes, mounts
 * and annotations, each in a stable order. The device plugin turns it into a
 * {@code ContainerAllocateResponse}, the DRA driver into the {@code containerEdits} of a CDI spec.
 *
 * <pre>{@code
 * ContainerEdits e = ContainerEdits.EMPTY.withEnv("QGPU_TENANT", "t1")
 *         .plus(new ContainerEdits(Map.of(), List.of(DeviceNode.rw("/dev/nvidia0")), List.of(), Map.of()));
 * }</pre>
 *
 * @param env         variables in the order they are set
 * @param deviceNodes device nodes in order
 * @param mounts      mounts in order
 * @param annotations annotations for the runtime, in order
 *
 * <p>Thread safety: immutable.
 */
public record ContainerEdits(Map<String, String> env, List<DeviceNode> deviceNodes, List<Mount> mounts,
                             Map<String, String> annotations) {

    /** No edits. */
    public static final ContainerEdits EMPTY = new ContainerEdits(Map.of(), List.of(), List.of(), Map.of());

    public ContainerEdits {
        env = ordered("containerEdits.env", env);
        deviceNodes = List.copyOf(Objects.requireNonNull(deviceNodes, "containerEdits.deviceNodes"));
        mounts = List.copyOf(Objects.requireNonNull(mounts, "containerEdits.mounts"));
        annotations = ordered("containerEdits.annotations", annotations);
    }

    /** These edits followed by {@code more}'s; a variable or annotation set by both takes {@code more}'s value. */
    public ContainerEdits plus(ContainerEdits more) {
        Map<String, String> e = new LinkedHashMap<>(env);
        e.putAll(more.env);
        List<DeviceNode> d = new ArrayList<>(deviceNodes);
        d.addAll(more.deviceNodes);
        List<Mount> m = new ArrayList<>(mounts);
        m.addAll(more.mounts);
        Map<String, String> a = new LinkedHashMap<>(annotations);
        a.putAll(more.annotations);
        return new ContainerEdits(e, d, m, a);
    }

    /** These edits with one more variable, set last. */
    public ContainerEdits withEnv(String name, String value) {
        return plus(new ContainerEdits(Map.of(name, value), List.of(), List.of(), Map.of()));
    }

    /** The environment as {@code NAME=VALUE} strings, the form of a CDI spec and of an OCI process. */
    public List<String> envStrings() {
        List<String> out = new ArrayList<>(env.size());
        env.forEach((k, v) -> out.add(k + "=" + v));
        return List.copyOf(out);
    }

    private static Map<String, String> ordered(String field, Map<String, String> m) {
        Objects.requireNonNull(m, field);
        Map<String, String> copy = new LinkedHashMap<>();
        m.forEach((k, v) -> {
            if (k == null || k.isEmpty() || v == null) {
                throw new IllegalArgumentException(field + " has an empty name or a null value: " + k + "=" + v);
            }
            copy.put(k, v);
        });
        return Collections.unmodifiableMap(copy);
    }

    /**
     * A device node, the same path on the host and in the container.
     *
     * @param path        path in the container and on the host
     * @param permissions cgroup permissions, for example {@code rw}
     */
    public record DeviceNode(String path, String permissions) {
        public DeviceNode {
            Objects.requireNonNull(path, "deviceNode.path");
            Objects.requireNonNull(permissions, "deviceNode.permissions");
            if (!path.startsWith("/")) {
                throw new IllegalArgumentException("deviceNode.path = " + path + ": must be absolute");
            }
        }

        /** Read-write access, as a GPU's device nodes need. */
        public static DeviceNode rw(String path) {
            return new DeviceNode(path, "rw");
        }
    }

    /**
     * A bind mount.
     *
     * @param hostPath      path on the host
     * @param containerPath path in the container
     * @param options       OCI mount options, for example {@code ro}, {@code bind}
     */
    public record Mount(String hostPath, String containerPath, List<String> options) {
        /** The options of a read-only bind mount, as NVIDIA's CDI specs write them. */
        public static final List<String> READ_ONLY = List.of("ro", "nosuid", "nodev", "bind");
        /** The options of a read-write bind mount. */
        public static final List<String> READ_WRITE = List.of("rw", "nosuid", "nodev", "bind");

        public Mount {
            Objects.requireNonNull(hostPath, "mount.hostPath");
            Objects.requireNonNull(containerPath, "mount.containerPath");
            options = List.copyOf(Objects.requireNonNull(options, "mount.options"));
        }

        /**
         * A bind mount of a node path, {@link #READ_ONLY} or {@link #READ_WRITE}.
         *
         * @throws IllegalArgumentException naming both paths when one is not absolute
         */
        public static Mount bind(String hostPath, String containerPath, boolean readOnly) {
            Objects.requireNonNull(hostPath, "mount.hostPath");
            Objects.requireNonNull(containerPath, "mount.containerPath");
            if (!hostPath.startsWith("/") || !containerPath.startsWith("/")) {
                throw new IllegalArgumentException("mount " + hostPath + " -> " + containerPath + ": both paths must be absolute");
            }
            return new Mount(hostPath, containerPath, readOnly ? READ_ONLY : READ_WRITE);
        }

        /** Whether the container may only read it (option {@code ro}); the device plugin API's {@code read_only}. */
        public boolean readOnly() {
            return options.contains("ro");
        }
    }
}
