package io.qgpu.testkit.property;

import static io.qgpu.testkit.property.Gens.constant;
import static io.qgpu.testkit.property.Gens.elements;
import static io.qgpu.testkit.property.Gens.frequency;
import static io.qgpu.testkit.property.Gens.weight;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.HostCapacity;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.Validate;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.machines.FakeCluster;
import io.qgpu.testkit.machines.MachineType;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Generators of the qgpu model: inventories of fake machines, claims on the granularity grid,
 * operation sequences (place/release) and whole scenarios. They are plain {@link Gen}s: use them
 * with {@link Property}, or call {@link Gen#generate} from any other framework.
 *
 * <pre>{@code
 * Gen<PropertyScenario> scenarios = QgpuGens.scenarios(InventoryOptions.defaults(), ClaimOptions.defaults(), 40);
 * Property.forAll(scenarios).verify(s -> Replay.run(myFactory, s).assertNoViolations());
 *
 * Claim c = QgpuGens.claims(ClaimOptions.defaults()).generate(new SplittableRandom(1));
 * }</pre>
 *
 * <p>Shrinking goes towards fewer nodes, the first machine type, no unhealthy GPUs, fewer and
 * smaller claims: 1 GPU, the smallest memory, compute 0, the first priority class, no labels and no
 * selectors. Tenant ids are {@code t0, t1, ...} in order of placement.
 *
 * <p>Thread safety: stateless.
 */
public final class QgpuGens {

    /** The node label inventories carry and node selectors ask for: {@code pool=a} or {@code pool=b}. */
    public static final String POOL_LABEL = "pool";
    /** Affinity labels drawn from. */
    public static final List<String> AFFINITY_LABELS = List.of("aff-0", "aff-1");
    /** Anti-affinity labels drawn from. */
    public static final List<String> ANTI_AFFINITY_LABELS = List.of("anti-0", "anti-1");
    /** Exclusion labels drawn from. */
    public static final List<String> EXCLUSION_LABELS = List.of("team-a", "team-b");
    /** A model no fake machine has, so that some model selectors cannot be met. */
    public static final String ABSENT_MODEL = "NVIDIA A100-SXM4-40GB";
    /** CPU capacities (millicores) nodes declare when host resources are on. */
    public static final List<Long> HOST_CPU_MILLIS = List.of(4_000L, 8_000L, 16_000L);
    /** Host memory capacities (GiB) nodes declare when host resources are on. */
    public static final List<Long> HOST_MEMORY_GIB = List.of(16L, 32L, 64L);

    private QgpuGens() {
    }

    // ------------------------------------------------------------------ inventories

    private record NodeSpec(MachineType type, Optional<String> pool, List<Integer> unhealthy,
                            Optional<PriorityClass> reservedFor, HostCapacity host) {
        NodeSpec withHost(HostCapacity h) {
            return new NodeSpec(type, pool, unhealthy, reservedFor, h);
        }
    }

    /** Inventories as {@code options} describe. */
    public static Gen<Inventory> inventories(InventoryOptions options) {
        Validate.notNull("inventories.options", options);
        Gen<Optional<String>> pool = options.labels() ? sometimes(elements("a", "b"), 1, 2) : constant(Optional.empty());
        Gen<List<Integer>> unhealthy = options.unhealthy()
                ? frequency(weight(4, constant(List.<Integer>of())), weight(1, Gens.lists(Gens.ints(0, 7), 1, 2)))
                : constant(List.of());
        Gen<Optional<PriorityClass>> reserved = options.reservedFor()
                ? sometimes(elements(PriorityClass.ONLINE, PriorityClass.OFFLINE), 3, 1) : constant(Optional.empty());
        Gen<HostCapacity> host = options.host()
                ? frequency(weight(1, constant(HostCapacity.untracked())), weight(4, Gens.zip(elements(HOST_CPU_MILLIS),
                        elements(HOST_MEMORY_GIB), (c, m) -> HostCapacity.of(c, m * GpuDevice.GIB))))
                : constant(HostCapacity.untracked());
        Gen<NodeSpec> spec = Gens.zip(Gens.zip(elements(options.machines()), pool, unhealthy, reserved,
                (m, p, u, r) -> new NodeSpec(m, p, u, r, HostCapacity.untracked())), host, NodeSpec::withHost);
        return Gens.lists(spec, options.minNodes(), options.maxNodes()).map(specs -> {
            FakeCluster.Builder b = FakeCluster.builder().rules(options.rules());
            for (NodeSpec s : specs) {
                b.nodes(s.type(), 1, g -> {
                    s.pool().ifPresent(p -> g.label(POOL_LABEL, p));
                    s.reservedFor().ifPresent(g::reservedFor);
                    g.host(s.host());
                    g.unhealthyGpus(s.unhealthy().stream().filter(i -> i < s.type().gpuCount())
                            .mapToInt(Integer::intValue).toArray());
                });
            }
            return b.build();
        });
    }

    // ------------------------------------------------------------------ claims

    private record Size(int gpus, boolean exclusive, long memoryUnits, int requestUnits, int extraUnits) {
    }

    /**
     * Single claims with tenant id {@code claim}, selectors drawn from the preset models and the
     * pool label (no UUID selectors: there is no inventory to draw UUIDs from).
     */
    public static Gen<Claim> claims(ClaimOptions options) {
        return claims(options, List.of(io.qgpu.testkit.machines.Machines.T4,
                io.qgpu.testkit.machines.Machines.V100_SXM2_32GB, io.qgpu.testkit.machines.Machines.H100_80GB),
                List.of());
    }

    /** Claims whose selectors name the models and GPU UUIDs of {@code inventory}. */
    public static Gen<Claim> claims(ClaimOptions options, Inventory inventory) {
        Set<String> models = new LinkedHashSet<>();
        List<String> uuids = new ArrayList<>();
        for (Node n : inventory.nodes()) {
            for (GpuDevice g : n.gpus()) {
                models.add(g.model());
                uuids.add(g.uuid());
            }
        }
        return claims(options, List.copyOf(models), uuids);
    }

    private static Gen<Claim> claims(ClaimOptions o, List<String> models, List<String> uuids) {
        Validate.notNull("claims.options", o);
        GranularityRules rules = o.rules();
        long unit = rules.memoryUnitBytes();
        long kMin = Math.max(1, (rules.minMemoryBytes() + unit - 1) / unit);
        long kMax = Math.max(kMin, o.maxMemoryBytes() / unit);
        long kSmall = Math.min(kMax, kMin + Math.max(0, 8 * GpuDevice.GIB / unit - 1));
        int steps = 100 / rules.computeUnit();

        Gen<Integer> gpus = o.maxGpus() == 1 ? constant(1)
                : frequency(weight(5, constant(1)), weight(2, Gens.ints(2, o.maxGpus(), 2)));
        Gen<Boolean> exclusive = o.exclusive() ? frequency(weight(9, constant(false)), weight(1, constant(true)))
                : constant(false);
        Gen<Long> memory = frequency(weight(4, Gens.longs(kMin, kSmall, kMin)), weight(1, Gens.longs(kMin, kMax, kMin)));
        Gen<Integer> request = frequency(weight(2, constant(0)), weight(3, Gens.ints(1, steps, 1)));
        Gen<Integer> extra = Gens.ints(0, steps, 0);
        Gen<Size> size = Gens.zip(Gens.zip(gpus, exclusive, (g, e) -> new Size(g, e, 0, 0, 0)),
                Gens.zip(memory, request, (m, r) -> new Size(0, false, m, r, 0)), extra,
                (a, b, e) -> new Size(a.gpus(), a.exclusive(), b.memoryUnits(), b.requestUnits(), e));

        Gen<Locality> locality = o.locality()
                ? Gens.zip(sometimes(elements(AFFINITY_LABELS), 5, 1), sometimes(elements(ANTI_AFFINITY_LABELS), 4, 1),
                        sometimes(elements(EXCLUSION_LABELS), 5, 1), Locality::new)
                : constant(Locality.none());

        List<String> modelPool = new ArrayList<>(models);
        modelPool.add(ABSENT_MODEL);
        Gen<Selectors> selectors = o.selectors() ? selectors(modelPool, uuids) : constant(Selectors.none());

        Gen<PriorityClass> priority = elements(o.priorities());
        Gen<Claim> claims = Gens.zip(size, priority, locality, selectors, (s, p, l, sel) -> build(rules, s, p, l, sel));
        return o.host() ? Gens.zip(claims, hostAsks(), QgpuGens::withHost) : claims;
    }

    /** What a claim asks of the host: CPU in 500m steps up to 8 CPUs, host memory up to 24 GiB, sometimes host only. */
    private record HostAsk(boolean hostOnly, long cpuMillis, long memoryGiB) {
    }

    private static Gen<HostAsk> hostAsks() {
        Gen<Long> cpu = frequency(weight(1, constant(0L)), weight(3, Gens.longs(1, 16, 1).map(x -> x * 500)));
        Gen<Long> mem = frequency(weight(1, constant(0L)), weight(2, Gens.longs(1, 24, 1)));
        Gen<Boolean> hostOnly = frequency(weight(6, constant(false)), weight(1, constant(true)));
        return Gens.zip(hostOnly, cpu, mem, HostAsk::new);
    }

    /**
     * The claim with the host ask; a host-only one keeps its class and node labels only (GPU selectors
     * and locality labels do not apply without a GPU) and asks for at least 500m.
     */
    private static Claim withHost(Claim c, HostAsk h) {
        if (!h.hostOnly()) {
            return c.toBuilder().cpuMillis(h.cpuMillis()).hostMemoryBytes(h.memoryGiB() * GpuDevice.GIB).build();
        }
        Selectors labels = Selectors.builder().build();
        if (!c.selectors().nodeLabels().isEmpty()) {
            Selectors.Builder b = Selectors.builder();
            c.selectors().nodeLabels().forEach(b::nodeLabel);
            labels = b.build();
        }
        return Claim.builder(c.tenantId()).hostOnly().priority(c.priority()).selectors(labels)
                .cpuMillis(Math.max(500, h.cpuMillis())).hostMemoryBytes(h.memoryGiB() * GpuDevice.GIB).build();
    }

    private record UuidPick(boolean include, String uuid) {
    }

    private static Gen<Selectors> selectors(List<String> models, List<String> uuids) {
        Gen<Optional<String>> include = sometimes(elements(models), 7, 1);
        Gen<Optional<String>> exclude = sometimes(elements(models), 9, 1);
        Gen<Optional<String>> pool = sometimes(elements("a", "b"), 7, 1);
        Gen<Optional<UuidPick>> uuid = uuids.isEmpty() ? constant(Optional.empty())
                : sometimes(Gens.zip(Gens.booleans(), elements(uuids), UuidPick::new), 9, 1);
        return Gens.zip(include, exclude, pool, uuid, (inc, exc, p, u) -> {
            Selectors.Builder b = Selectors.builder();
            inc.ifPresent(b::includeModel);
            exc.ifPresent(b::excludeModel);
            p.ifPresent(v -> b.nodeLabel(POOL_LABEL, v));
            u.ifPresent(pick -> {
                if (pick.include()) {
                    b.includeUuid(pick.uuid());
                } else {
                    b.excludeUuid(pick.uuid());
                }
            });
            return b.build();
        });
    }

    private static Claim build(GranularityRules rules, Size s, PriorityClass p, Locality l, Selectors sel) {
        Claim.Builder b = Claim.builder("claim").gpus(s.gpus()).priority(p).locality(l).selectors(sel);
        if (s.exclusive()) {
            return b.exclusive().build();
        }
        int cu = rules.computeUnit();
        int request = s.requestUnits() * cu;
        int base = Math.max(request, cu);
        int limit = base + Math.min(s.extraUnits(), (100 - base) / cu) * cu;
        return b.memoryBytes(s.memoryUnits() * rules.memoryUnitBytes()).compute(request, limit).build();
    }

    /** Lists of claims with distinct tenant ids {@code t0, t1, ...}. */
    public static Gen<List<Claim>> claimLists(Gen<Claim> claims, int minSize, int maxSize) {
        return Gens.lists(claims, minSize, maxSize).map(cs -> {
            List<Claim> out = new ArrayList<>(cs.size());
            for (int i = 0; i < cs.size(); i++) {
                out.add(cs.get(i).toBuilder().tenantId("t" + i).build());
            }
            return List.copyOf(out);
        });
    }

    // ------------------------------------------------------------------ operations

    /**
     * Sequences of up to {@code maxOps} operations: three places to one release. Places get tenant
     * ids {@code t0, t1, ...}; a release names an earlier placed tenant (perhaps released already),
     * or {@code nobody} before any place.
     */
    public static Gen<List<Op>> operations(Gen<Claim> claims, int maxOps) {
        Validate.notNull("operations.claims", claims);
        Validate.atLeast("operations.maxOps", maxOps, 0);
        Gen<Object> step = frequency(weight(3, claims.map(c -> (Object) c)),
                weight(1, Gens.ints(0, 1_000_000).map(i -> (Object) i)));
        return Gens.lists(step, 0, maxOps).map(steps -> {
            List<Op> ops = new ArrayList<>(steps.size());
            List<String> placed = new ArrayList<>();
            for (Object s : steps) {
                if (s instanceof Claim c) {
                    String id = "t" + placed.size();
                    placed.add(id);
                    ops.add(new Op.Place(c.toBuilder().tenantId(id).build()));
                } else {
                    int pick = (Integer) s;
                    ops.add(new Op.Release(placed.isEmpty() ? "nobody" : placed.get(pick % placed.size())));
                }
            }
            return List.copyOf(ops);
        });
    }

    /**
     * An inventory and an operation sequence over it. Claims follow the inventory's rules (the
     * rules of {@code claims} are replaced) and name its models and GPUs in selectors.
     */
    public static Gen<PropertyScenario> scenarios(InventoryOptions inventory, ClaimOptions claims, int maxOps) {
        Validate.notNull("scenarios.claims", claims);
        return inventories(inventory).flatMap(inv ->
                operations(claims(claims.withRules(inv.rules()), inv), maxOps).map(ops -> new PropertyScenario(inv, ops)));
    }

    /** Empty ({@code absent} times in {@code absent + present}) or a value of {@code gen}. */
    private static <T> Gen<Optional<T>> sometimes(Gen<T> gen, int absent, int present) {
        return frequency(weight(absent, constant(Optional.<T>empty())), weight(present, gen.map(Optional::of)));
    }
}
