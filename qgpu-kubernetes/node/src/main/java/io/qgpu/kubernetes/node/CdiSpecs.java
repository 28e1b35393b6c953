package io.qgpu.kubernetes.node;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qgpu.kubernetes.node.ContainerEdits.DeviceNode;
import io.qgpu.kubernetes.node.ContainerEdits.Mount;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Container Device Interface (CDI) spec files of kind {@value #KIND}, one per transient owner (a
 * ResourceClaim's uid), written atomically ({@link AtomicFiles}) directly in the CDI root that the
 * container runtime reads ({@code /var/run/cdi} by default), as JSON, named as CDI's transient specs
 * are: {@code qgpu.io-gpu_<id>.json}.
 *
 * <p>The spec's own {@code containerEdits} carry what the owner's container gets once (they apply
 * whenever one of its devices is requested); each device's {@code containerEdits} what that device
 * adds; the common annotations go into the spec's {@code annotations}. Environment variables are
 * {@code "NAME=VALUE"} strings, device nodes {@code {"path", "permissions"}}, mounts
 * {@code {"hostPath", "containerPath", "options"}}. {@value #CDI_VERSION} is the first CDI version with
 * annotations.
 *
 * <pre>{@code
 * CdiSpecs cdi = new CdiSpecs(Path.of("/var/run/cdi"));
 * List<String> ids = cdi.write(claimUid, edits.common(), List.of(new CdiSpecs.Device(claimUid + "-gpu-0", perGpu)));
 * ids.get(0);   // "qgpu.io/gpu=<uid>-gpu-0", the id the kubelet hands to the runtime
 * cdi.delete(claimUid);
 * }</pre>
 *
 * <p>Thread safety: thread-safe (each write replaces a whole file atomically).
 */
public final class CdiSpecs {
    /** The CDI kind (vendor/class) of every qgpu device. */
    public static final String KIND = "qgpu.io/gpu";
    /** The CDI version the specs declare. */
    public static final String CDI_VERSION = "0.6.0";
    /** CDI's rule for device names and transient ids. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?");
    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final Path root;

    /** @param root the CDI root the runtime reads */
    public CdiSpecs(Path root) {
        this.root = Objects.requireNonNull(root, "cdiRoot").toAbsolutePath();
    }

    /** The CDI root. */
    public Path root() {
        return root;
    }

    /** The spec file of an owner. */
    public Path file(String transientId) {
        return root.resolve(KIND.replace('/', '-') + "_" + checked("transientId", transientId) + ".json");
    }

    /** The fully qualified CDI device id of a device name: {@code qgpu.io/gpu=NAME}. */
    public static String qualifiedName(String deviceName) {
        return KIND + "=" + checked("device name", deviceName);
    }

    /**
     * Writes (or replaces) the owner's spec ({@link #ensure}: a file that already holds it is left alone).
     *
     * @return the qualified CDI ids of the devices, in order
     * @throws IllegalArgumentException naming a device name CDI does not allow, or an empty device list
     * @throws UncheckedIOException     naming the file when it cannot be written
     */
    public List<String> write(String transientId, ContainerEdits common, List<Device> devices) {
        ensure(transientId, common, devices);
        return ids(devices);
    }

    /**
     * Writes the owner's spec only when the file is missing or holds anything else: the reconciler's idempotent
     * step, which leaves a spec that is as wanted untouched.
     *
     * @return whether the file was written
     * @throws UncheckedIOException naming the file when it cannot be read or written
     */
    public boolean ensure(String transientId, ContainerEdits common, List<Device> devices) {
        Path file = file(transientId);
        byte[] content = render(transientId, common, devices);
        try {
            if (Files.isRegularFile(file) && java.util.Arrays.equals(Files.readAllBytes(file), content)) {
                return false;
            }
            AtomicFiles.write(file, content);
            return true;
        } catch (IOException e) {
            throw new UncheckedIOException("CDI spec " + file + " cannot be written: " + e.getMessage(), e);
        }
    }

    /**
     * The owners whose specs of kind {@value #KIND} are in the root now (files {@code qgpu.io-gpu_<id>.json});
     * empty when the root does not exist.
     *
     * @throws UncheckedIOException naming the root when it cannot be listed
     */
    public java.util.Set<String> transientIds() {
        String prefix = KIND.replace('/', '-') + "_";
        java.util.Set<String> out = new java.util.TreeSet<>();
        try (java.nio.file.DirectoryStream<Path> files = Files.newDirectoryStream(root, prefix + "*.json")) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                out.add(name.substring(prefix.length(), name.length() - ".json".length()));
            }
        } catch (java.nio.file.NoSuchFileException e) {
            return java.util.Set.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the CDI root " + root + ": " + e.getMessage(), e);
        }
        return out;
    }

    /** The qualified ids of these devices, in order. */
    public static List<String> ids(List<Device> devices) {
        List<String> ids = new ArrayList<>();
        for (Device d : devices) {
            ids.add(qualifiedName(d.name()));
        }
        return List.copyOf(ids);
    }

    private static byte[] render(String transientId, ContainerEdits common, List<Device> devices) {
        Objects.requireNonNull(common, "common");
        if (devices == null || devices.isEmpty()) {
            throw new IllegalArgumentException("a CDI spec needs at least one device (owner " + transientId + ")");
        }
        ObjectNode spec = MAPPER.createObjectNode();
        spec.put("cdiVersion", CDI_VERSION);
        spec.put("kind", KIND);
        if (!common.annotations().isEmpty()) {
            ObjectNode a = spec.putObject("annotations");
            common.annotations().forEach(a::put);
        }
        ArrayNode list = spec.putArray("devices");
        for (Device d : devices) {
            ObjectNode o = list.addObject();
            o.put("name", d.name());
            if (!d.edits().annotations().isEmpty()) {
                ObjectNode a = o.putObject("annotations");
                d.edits().annotations().forEach(a::put);
            }
            o.set("containerEdits", edits(d.edits()));
        }
        spec.set("containerEdits", edits(common));
        try {
            return MAPPER.writeValueAsBytes(spec);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("CDI spec of " + transientId + " cannot be rendered: " + e.getMessage(), e);
        }
    }

    /**
     * Removes the temporary files of spec writes that did not finish (a driver killed between writing one and
     * renaming it; {@link AtomicFiles#removeLeftovers}), this kind's only. Call it at a start, before the first
     * write.
     *
     * @return the files removed
     * @throws UncheckedIOException naming the root when they cannot be removed
     */
    public List<Path> removeLeftovers() {
        try {
            return AtomicFiles.removeLeftovers(root, KIND.replace('/', '-') + "_");
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
    }

    /**
     * Removes the owner's spec.
     *
     * @return whether there was one
     */
    public boolean delete(String transientId) {
        Path file = file(transientId);
        try {
            return Files.deleteIfExists(file);
        } catch (IOException e) {
            throw new UncheckedIOException("CDI spec " + file + " cannot be removed: " + e.getMessage(), e);
        }
    }

    private static ObjectNode edits(ContainerEdits e) {
        ObjectNode o = MAPPER.createObjectNode();
        if (!e.env().isEmpty()) {
            ArrayNode env = o.putArray("env");
            e.envStrings().forEach(env::add);
        }
        if (!e.deviceNodes().isEmpty()) {
            ArrayNode nodes = o.putArray("deviceNodes");
            for (DeviceNode n : e.deviceNodes()) {
                nodes.addObject().put("path", n.path()).put("permissions", n.permissions());
            }
        }
        if (!e.mounts().isEmpty()) {
            ArrayNode mounts = o.putArray("mounts");
            for (Mount m : e.mounts()) {
                ObjectNode mo = mounts.addObject().put("hostPath", m.hostPath()).put("containerPath", m.containerPath());
                ArrayNode opts = mo.putArray("options");
                m.options().forEach(opts::add);
            }
        }
        return o;
    }

    private static String checked(String what, String name) {
        if (name == null || name.length() > 253 || !NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("CDI " + what + " " + name
                    + ": must be letters, digits, '-', '_', '.', ':' and begin and end with a letter or digit");
        }
        return name;
    }

    /**
     * One device of a spec.
     *
     * @param name  its CDI name (unique within the kind)
     * @param edits what requesting it adds
     */
    public record Device(String name, ContainerEdits edits) {
        public Device {
            checked("device name", name);
            Objects.requireNonNull(edits, "device.edits");
        }
    }
}
