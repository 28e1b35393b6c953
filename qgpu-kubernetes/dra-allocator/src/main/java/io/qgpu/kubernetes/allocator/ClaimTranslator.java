package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceConstraint;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequest;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceSelector;
import io.fabric8.kubernetes.api.model.resource.v1.ExactDeviceRequest;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.NumaPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.QgpuException;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * Turns a ResourceClaim into what qgpu's engine places ({@link ClaimAsk}), or says why it cannot.
 *
 * <p>A claim is the allocator's when a request names one of its device classes ({@code --device-class}); a claim
 * whose requests name none of them is left to kube-scheduler. A claim of the allocator's must be one qgpu can
 * give and the node's driver prepares, else it is refused with the reason (and left unallocated):
 * <ul>
 *   <li>every request is an {@code exactly} request of one of the allocator's classes (a claim mixing them with
 *       other classes, or using {@code firstAvailable}, is refused: one claim, one allocator);</li>
 *   <li>{@code allocationMode} {@code ExactCount} (the default) with {@code count} from 1 (the default); {@code All}
 *       and {@code adminAccess} are refused;</li>
 *   <li>{@code capacity.requests} names only {@code memory} (a quantity of bytes) and {@code cores} (a whole number
 *       from 1 to 100); every request of the claim asks for the same (qgpu gives a claim the same slice on each of
 *       its GPUs, on distinct GPUs); no capacity at all is whole GPUs; {@code cores} without {@code memory} is
 *       refused (a share needs its memory); {@code memory} without {@code cores} consumes the {@code cores} default
 *       the driver publishes, 100;</li>
 *   <li>the amounts are rounded up to the grid of the granularity rules ({@code --rules}, the rules the node's
 *       driver publishes its {@code requestPolicy} from): memory to the memory unit and at least the smallest share,
 *       cores to the compute step;</li>
 *   <li>the selectors of the request and of its DeviceClass are of the forms {@link DeviceSelectors} lists, and the
 *       same on every request of the claim;</li>
 *   <li>{@code constraints}: only {@code matchAttribute} on {@code numaNode} (all the claim's GPUs on one NUMA
 *       node, {@link NumaPolicy#REQUIRED}).</li>
 * </ul>
 * The claim's GpuConfig ({@link DraAllocator.PriorityOf}) is checked (one that is not valid refuses the claim, naming the
 * field) and travels to the driver in the allocation, which applies the priority and the compute limit at prepare.
 * In the allocator's ledger every claim is of one class, {@link #LEDGER_CLASS}: the slice publishes one {@code cores}
 * capacity per device that the consumption of every allocation counts against, whatever its priority, so qgpu's
 * admission of each class up to 100% of a GPU would let the consumed cores pass the capacity.
 *
 * <p>Thread safety: immutable; {@link #translate} may run on any thread.
 */
final class ClaimTranslator {
    /** The priority class of every claim in the allocator's ledger (see the class comment). */
    static final PriorityClass LEDGER_CLASS = PriorityClass.OFFLINE;
    /** The most cores a share can ask for: one GPU's. */
    static final int ALL_CORES = 100;

    /** What a claim is to the allocator. */
    sealed interface Translation {
        /** A claim of the allocator's, ready to place. */
        record Ours(ClaimAsk ask) implements Translation {
        }

        /** A claim of the allocator's that it cannot allocate. */
        record Refused(String reason) implements Translation {
        }

        /** A claim that uses none of the allocator's classes. */
        record NotOurs() implements Translation {
        }
    }

    private final Set<String> classes;
    private final GranularityRules rules;
    private final DraAllocator.PriorityOf priority;

    ClaimTranslator(Set<String> deviceClasses, GranularityRules rules, DraAllocator.PriorityOf priority) {
        this.classes = Set.copyOf(deviceClasses);
        this.rules = rules;
        this.priority = priority;
    }

    /** Whether any request of the claim names one of the allocator's classes (exactly or among firstAvailable). */
    boolean uses(ResourceClaim rc) {
        return ClaimScope.used(rc.getSpec(), classes).isPresent();
    }

    private static List<DeviceRequest> requests(ResourceClaim rc) {
        if (rc.getSpec() == null || rc.getSpec().getDevices() == null || rc.getSpec().getDevices().getRequests() == null) {
            return List.of();
        }
        return rc.getSpec().getDevices().getRequests();
    }

    /**
     * The claim as qgpu's engine places it.
     *
     * @param classLookup the DeviceClasses by name (the informer's cache)
     */
    Translation translate(ResourceClaim rc, Function<String, Optional<DeviceClass>> classLookup) {
        if (!uses(rc)) {
            return new Translation.NotOurs();
        }
        try {
            return new Translation.Ours(ask(rc, classLookup));
        } catch (IllegalArgumentException e) {
            return new Translation.Refused(e.getMessage());
        }
    }

    private ClaimAsk ask(ResourceClaim rc, Function<String, Optional<DeviceClass>> classLookup) {
        List<DeviceRequest> requests = requests(rc);
        List<ClaimAsk.Request> out = new ArrayList<>();
        Long memory = null;
        Integer cores = null;
        boolean first = true;
        DeviceSelectors selectors = DeviceSelectors.NONE;
        for (int i = 0; i < requests.size(); i++) {
            DeviceRequest r = requests.get(i);
            String at = "spec.devices.requests[" + i + "]";
            if (r.getExactly() == null) {
                throw new IllegalArgumentException(at + " (" + r.getName() + ") uses firstAvailable: the qgpu allocator "
                        + "allocates exact requests only (name one device class and count)");
            }
            ExactDeviceRequest e = r.getExactly();
            at += ".exactly";
            if (!classes.contains(e.getDeviceClassName())) {
                throw new IllegalArgumentException(at + ".deviceClassName = " + e.getDeviceClassName() + ": another request "
                        + "of this claim uses qgpu's class " + classes.iterator().next() + "; one claim is allocated by one "
                        + "allocator, so put the other devices in a claim of their own");
            }
            if (Boolean.TRUE.equals(e.getAdminAccess())) {
                throw new IllegalArgumentException(at + ".adminAccess = true: the qgpu allocator does not give admin access");
            }
            String mode = e.getAllocationMode() == null ? "ExactCount" : e.getAllocationMode();
            if (!mode.equals("ExactCount")) {
                throw new IllegalArgumentException(at + ".allocationMode = " + mode + ": the qgpu allocator allocates "
                        + "ExactCount requests only");
            }
            long count = e.getCount() == null ? 1 : e.getCount();
            if (count < 1 || count > 1024) {
                throw new IllegalArgumentException(at + ".count = " + count + ": must be from 1 to 1024");
            }
            Map<String, Quantity> cap = e.getCapacity() == null || e.getCapacity().getRequests() == null ? Map.of()
                    : e.getCapacity().getRequests();
            Long m = null;
            Integer c = null;
            for (Map.Entry<String, Quantity> q : cap.entrySet()) {
                String qat = at + ".capacity.requests." + q.getKey();
                switch (q.getKey()) {
                    case DraNames.CAPACITY_MEMORY -> m = bytes(qat, q.getValue());
                    case DraNames.CAPACITY_CORES -> c = cores(qat, q.getValue());
                    default -> throw new IllegalArgumentException(qat + " = " + q.getValue() + ": qgpu's devices take requests "
                            + "for " + DraNames.CAPACITY_MEMORY + " and " + DraNames.CAPACITY_CORES + " only"
                            + (q.getKey().equals(DraNames.CAPACITY_TENANTS) ? " (every allocation consumes one tenant)" : ""));
                }
            }
            if (c != null && m == null) {
                throw new IllegalArgumentException(at + ".capacity.requests asks for " + DraNames.CAPACITY_CORES + " "
                        + c + " without " + DraNames.CAPACITY_MEMORY + ": a share of a GPU needs its memory (ask for neither "
                        + "for a whole GPU)");
            }
            if (m != null && c == null) {
                c = ALL_CORES;
            }
            DeviceSelectors s = selectors(at, e, classLookup);
            if (first) {
                memory = m;
                cores = c;
                selectors = s;
                first = false;
            } else {
                if (!java.util.Objects.equals(memory, m) || !java.util.Objects.equals(cores, c)) {
                    throw new IllegalArgumentException(at + ".capacity.requests = " + cap + " differs from the claim's first "
                            + "request's: qgpu gives a claim the same share on each of its GPUs (use a claim per share)");
                }
                if (!selectors.sameAs(s)) {
                    throw new IllegalArgumentException(at + ".selectors " + s.expressions() + " differ from the claim's first "
                            + "request's " + selectors.expressions() + ": qgpu gives a claim one set of GPU selectors");
                }
            }
            out.add(new ClaimAsk.Request(r.getName(), (int) count));
        }
        int gpus = out.stream().mapToInt(ClaimAsk.Request::count).sum();
        if (gpus > 1024) {
            throw new IllegalArgumentException("spec.devices.requests ask for " + gpus + " GPUs in all: at most 1024");
        }
        String uid = rc.getMetadata().getUid();
        Claim.Builder b = Claim.builder(uid).gpus(gpus).numa(numa(rc));
        try {
            priority.of(rc, classLookup);   // checked; the driver applies it
            b.priority(LEDGER_CLASS);
        } catch (IllegalArgumentException x) {
            throw new IllegalArgumentException(x.getMessage());
        }
        if (memory == null) {
            b.exclusive();
        } else {
            long mem = roundMemory(memory);
            int cr = roundCores(cores);
            b.memoryBytes(mem).compute(cr, cr);
        }
        Claim claim;
        try {
            claim = b.build();
            rules.validate(claim);
        } catch (QgpuException x) {
            throw new IllegalArgumentException("the claim is not one qgpu can place: " + x.getMessage());
        }
        return new ClaimAsk(rc.getMetadata().getNamespace(), rc.getMetadata().getName(), uid, out, claim, selectors);
    }

    private DeviceSelectors selectors(String at, ExactDeviceRequest e, Function<String, Optional<DeviceClass>> classLookup) {
        List<String> exprs = new ArrayList<>();
        List<String> where = new ArrayList<>();
        Optional<DeviceClass> dc = classLookup.apply(e.getDeviceClassName());
        if (dc.isEmpty()) {
            throw new IllegalArgumentException(at + ".deviceClassName = " + e.getDeviceClassName() + ": no such DeviceClass "
                    + "(create it: the dra-driver's deploy/deviceclass.yaml)");
        }
        List<DeviceSelector> classSel = dc.get().getSpec() == null || dc.get().getSpec().getSelectors() == null ? List.of()
                : dc.get().getSpec().getSelectors();
        add(exprs, where, classSel, "DeviceClass " + e.getDeviceClassName() + " spec.selectors");
        add(exprs, where, e.getSelectors() == null ? List.of() : e.getSelectors(), at + ".selectors");
        try {
            return DeviceSelectors.parse(exprs, where);
        } catch (DeviceSelectors.UnsupportedSelector x) {
            throw new IllegalArgumentException(x.getMessage());
        }
    }

    private static void add(List<String> exprs, List<String> where, List<DeviceSelector> sel, String at) {
        for (int i = 0; i < sel.size(); i++) {
            DeviceSelector s = sel.get(i);
            if (s.getCel() == null) {
                throw new IllegalArgumentException(at + "[" + i + "] has no cel expression: the qgpu allocator understands "
                        + "CEL selectors only");
            }
            exprs.add(s.getCel().getExpression());
            where.add(at + "[" + i + "].cel.expression");
        }
    }

    private static NumaPolicy numa(ResourceClaim rc) {
        List<DeviceConstraint> cs = rc.getSpec().getDevices().getConstraints();
        NumaPolicy p = NumaPolicy.PREFERRED;
        for (int i = 0; cs != null && i < cs.size(); i++) {
            DeviceConstraint c = cs.get(i);
            String at = "spec.devices.constraints[" + i + "]";
            String attr = c.getMatchAttribute();
            if (attr == null) {
                throw new IllegalArgumentException(at + " is not a matchAttribute constraint: the qgpu allocator understands "
                        + "matchAttribute " + DraNames.DRIVER + "/" + DraNames.ATTRIBUTE_NUMA_NODE + " only");
            }
            if (!attr.equals(DraNames.DRIVER + "/" + DraNames.ATTRIBUTE_NUMA_NODE)) {
                throw new IllegalArgumentException(at + ".matchAttribute = " + attr + ": the qgpu allocator can keep a claim's "
                        + "GPUs on one NUMA node (" + DraNames.DRIVER + "/" + DraNames.ATTRIBUTE_NUMA_NODE + ") and no other "
                        + "attribute the same");
            }
            p = NumaPolicy.REQUIRED;
        }
        return p;
    }

    private static long bytes(String at, Quantity q) {
        BigDecimal b = amount(at, q);
        if (b.signum() <= 0 || b.stripTrailingZeros().scale() > 0) {
            throw new IllegalArgumentException(at + " = " + q + ": must be a positive whole number of bytes");
        }
        try {
            return b.longValueExact();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(at + " = " + q + ": more bytes than a GPU can have");
        }
    }

    private static int cores(String at, Quantity q) {
        BigDecimal b = amount(at, q);
        if (b.stripTrailingZeros().scale() > 0 || b.compareTo(BigDecimal.ONE) < 0 || b.compareTo(BigDecimal.valueOf(ALL_CORES)) > 0) {
            throw new IllegalArgumentException(at + " = " + q + ": must be a whole number from 1 to 100 (percent of one GPU)");
        }
        return b.intValueExact();
    }

    /** The quantity's amount, exactly ({@code 10Gi}: 10737418240; {@code 30}: 30). */
    private static BigDecimal amount(String at, Quantity q) {
        try {
            return Quantity.getAmountInBytes(q);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(at + " = " + q + ": not a quantity");
        }
    }

    /** Memory rounded up to the rules' unit, at least the smallest share (the published {@code requestPolicy}). */
    long roundMemory(long requested) {
        long unit = rules.memoryUnitBytes();
        long min = Math.max(unit, (rules.minMemoryBytes() + unit - 1) / unit * unit);
        long r = Math.max(requested, min);
        if (r > Long.MAX_VALUE - unit) {
            throw new IllegalArgumentException("memory " + requested + " bytes: more than a GPU can have");
        }
        return (r + unit - 1) / unit * unit;
    }

    /** Cores rounded up to the rules' compute step, at least one step. */
    int roundCores(int requested) {
        int unit = rules.computeUnit();
        return Math.min(ALL_CORES, Math.max(unit, (requested + unit - 1) / unit * unit));
    }
}
