package io.qgpu.json;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.NumaPolicy;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.api.Topology;
import io.qgpu.api.TopologyLevel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The wire format: plain records that Jackson maps, and their conversions to the model. Every
 * component is {@code @Nullable}: any key may be left out of the input (or written {@code null}); a
 * conversion refuses a missing key that is required with {@link #required}, naming its path.
 */
final class Dto {
    private Dto() {
    }

    static <T> List<T> orEmpty(@Nullable List<T> l) {
        return l == null ? List.of() : l;
    }

    static <T> Set<T> orEmpty(@Nullable Set<T> l) {
        return l == null ? Set.of() : l;
    }

    static <K, V> Map<K, V> orEmpty(@Nullable Map<K, V> m) {
        return m == null ? Map.of() : m;
    }

    static <T> T required(String field, @Nullable T v) {
        if (v == null) {
            throw new InvalidValueException(field, null, "is required");
        }
        return v;
    }

    static long memory(String field, @Nullable Long bytes, @Nullable Long gib, boolean required) {
        if (bytes != null && gib != null) {
            throw new InvalidValueException(field, bytes, "give memoryBytes or memoryGiB, not both");
        }
        if (gib != null) {
            if (gib < 0 || gib > Long.MAX_VALUE / GpuDevice.GIB) {
                throw new InvalidValueException(field.replace("memoryBytes", "memoryGiB"), gib, "must be between 0 and " + Long.MAX_VALUE / GpuDevice.GIB);
            }
            return gib * GpuDevice.GIB;
        }
        if (bytes == null) {
            if (required) {
                throw new InvalidValueException(field, null, "is required (memoryBytes or memoryGiB)");
            }
            return 0;
        }
        return bytes;
    }

    // ------------------------------------------------------------ links

    /**
     * A link as written in JSON: the PCIe level ({@code PSB, PIX, PXB, PHB, NODE, SYS}) for a PCIe-only
     * pair; {@code NV<lanes>} for NVLink, optionally followed by {@code /<PCIe level>} (the pair's
     * common PCIe ancestor; SYS when left out) and {@code /NVSWITCH} when the links go through an
     * NVSwitch: {@code NV12/PXB/NVSWITCH}.
     */
    static String linkLabel(GpuLink l) {
        return GpuLink.format(l);
    }

    static GpuLink parseLink(String field, @Nullable String label) {
        return GpuLink.parse(field, required(field, label));
    }

    // ------------------------------------------------------------ rules

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"name", "memoryUnitBytes", "minMemoryBytes", "computeUnit", "maxTenantsPerGpu", "memoryPerTenantSlotBytes",
            "admitZeroRequestOnBookedGpu", "shareMigInstances"})
    record RulesDto(@Nullable String name, @Nullable Long memoryUnitBytes, @Nullable Long minMemoryBytes,
                    @Nullable Integer computeUnit, @Nullable Integer maxTenantsPerGpu,
                    @Nullable Long memoryPerTenantSlotBytes, @Nullable Boolean admitZeroRequestOnBookedGpu,
                    @Nullable Boolean shareMigInstances) {
        static RulesDto of(GranularityRules r) {
            return new RulesDto(r.name(), r.memoryUnitBytes(), r.minMemoryBytes(), r.computeUnit(), r.maxTenantsPerGpu(),
                    r.memoryPerTenantSlotBytes(), r.admitZeroRequestOnBookedGpu() ? Boolean.TRUE : null,
                    r.shareMigInstances() ? Boolean.TRUE : null);
        }

        GranularityRules toModel() {
            boolean admitZero = Boolean.TRUE.equals(admitZeroRequestOnBookedGpu);
            boolean shareMig = Boolean.TRUE.equals(shareMigInstances);
            if (memoryUnitBytes == null && minMemoryBytes == null && computeUnit == null && maxTenantsPerGpu == null
                    && memoryPerTenantSlotBytes == null) {
                return GranularityRules.preset(required("rules.name", name)).toBuilder().admitZeroRequestOnBookedGpu(admitZero)
                        .shareMigInstances(shareMig).build();
            }
            return new GranularityRules(required("rules.name", name), required("rules.memoryUnitBytes", memoryUnitBytes),
                    required("rules.minMemoryBytes", minMemoryBytes), required("rules.computeUnit", computeUnit),
                    required("rules.maxTenantsPerGpu", maxTenantsPerGpu),
                    required("rules.memoryPerTenantSlotBytes", memoryPerTenantSlotBytes), admitZero, shareMig);
        }
    }

    // ------------------------------------------------------------ inventory

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"uuid", "index", "model", "memoryBytes", "memoryGiB", "health", "numaNode", "isolationPolicy", "reservedFor",
            "tenants"})
    record GpuDto(@Nullable String uuid, @Nullable Integer index, @Nullable String model, @Nullable Long memoryBytes,
                  @Nullable Long memoryGiB, @Nullable String health, @Nullable Integer numaNode,
                  @Nullable String isolationPolicy, @Nullable String reservedFor, @Nullable List<HoldingDto> tenants) {
        static GpuDto of(GpuDevice g) {
            return of(g, null);
        }

        static GpuDto of(GpuDevice g, @Nullable List<HoldingDto> tenants) {
            return new GpuDto(g.uuid(), g.index(), g.model(), g.memoryBytes(), null, g.health().name().toLowerCase(java.util.Locale.ROOT),
                    g.numaNode(), g.isolationPolicy().wireName(), g.reservedFor().map(PriorityClass::wireName).orElse(null),
                    tenants == null || tenants.isEmpty() ? null : tenants);
        }

        GpuDevice toModel(String f) {
            String u = required(f + ".uuid", uuid);
            GpuDevice.Builder b = GpuDevice.builder(u)
                    .index(required(f + ".index", index))
                    .model(model == null ? "unknown" : model)
                    .memoryBytes(memory(f + ".memoryBytes", memoryBytes, memoryGiB, true))
                    .health(health == null ? Health.HEALTHY : parseHealth(f + ".health", health))
                    .numaNode(numaNode == null ? -1 : numaNode)
                    .isolationPolicy(isolationPolicy == null ? IsolationPolicy.BEST_EFFORT
                            : IsolationPolicy.fromName(f + ".isolationPolicy", isolationPolicy));
            if (reservedFor != null) {
                b.reservedFor(PriorityClass.fromName(f + ".reservedFor", reservedFor));
            }
            return b.build();
        }
    }

    static Health parseHealth(String field, String s) {
        for (Health h : Health.values()) {
            if (h.name().equalsIgnoreCase(s)) {
                return h;
            }
        }
        throw new InvalidValueException(field, s, "must be healthy or unhealthy");
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    record LinkDto(@Nullable Integer a, @Nullable Integer b, @Nullable String link) {
    }

    /**
     * A tenant already on a GPU: its slice there and what the claim needs to be rebuilt. A tenant on
     * several GPUs of a node is listed on each with the same values.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"tenant", "memoryBytes", "memoryGiB", "computeRequest", "computeLimit", "priority", "exclusive", "locality",
            "host"})
    record HoldingDto(@Nullable String tenant, @Nullable Long memoryBytes, @Nullable Long memoryGiB,
                      @Nullable Integer computeRequest, @Nullable Integer computeLimit, @Nullable String priority,
                      @Nullable Boolean exclusive, @Nullable LocalityDto locality, @Nullable HostDto host) {
        static HoldingDto of(Placement p, Slice s) {
            Claim c = p.claim();
            return new HoldingDto(c.tenantId(), c.exclusive() ? null : s.memoryBytes(), null,
                    c.exclusive() ? null : c.computeRequest(), c.exclusive() ? null : c.computeLimit(), c.priority().wireName(),
                    c.exclusive() ? Boolean.TRUE : null, LocalityDto.of(c.locality()), HostDto.of(c.host()));
        }

        /** The claim of one GPU's listing: as a claim file would give it, with {@code gpus} GPUs. */
        Claim claim(String f, int gpus) {
            return new ClaimDto(required(f + ".tenant", tenant), gpus, memoryBytes, memoryGiB, computeRequest, computeLimit,
                    priority, exclusive, null, locality, null, null, null, null, host).toModel(f);
        }
    }

    @JsonInclude(JsonInclude.Include.NON_EMPTY)
    @JsonPropertyOrder({"name", "labels", "gpus", "defaultLink", "links", "host", "hostTenants"})
    record NodeDto(@Nullable String name, @Nullable Map<String, String> labels, @Nullable List<GpuDto> gpus,
                   @Nullable String defaultLink, @Nullable List<LinkDto> links, @Nullable HostDto host,
                   @Nullable List<HostDto.HostTenantDto> hostTenants) {
        static NodeDto of(Node n) {
            Topology t = n.topology();
            // write the most common link as the default and the rest as exceptions
            Map<String, Integer> counts = new LinkedHashMap<>();
            for (int a = 0; a < t.size(); a++) {
                for (int b = a + 1; b < t.size(); b++) {
                    counts.merge(linkLabel(t.link(a, b)), 1, Integer::sum);
                }
            }
            String common = counts.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey).orElse(null);
            List<LinkDto> links = new ArrayList<>();
            for (int a = 0; a < t.size(); a++) {
                for (int b = a + 1; b < t.size(); b++) {
                    String l = linkLabel(t.link(a, b));
                    if (!l.equals(common)) {
                        links.add(new LinkDto(a, b, l));
                    }
                }
            }
            return new NodeDto(n.name(), n.labels(), n.gpus().stream().map(GpuDto::of).toList(), common, links,
                    HostDto.of(n.host()), null);
        }

        /** The node with each GPU's holdings listed under {@code tenants}. */
        static NodeDto of(Node n, List<Placement> holdings) {
            NodeDto plain = of(n);
            Map<String, List<HoldingDto>> byGpu = new LinkedHashMap<>();
            List<HostDto.HostTenantDto> hostOnly = new ArrayList<>();
            for (Placement p : holdings) {
                if (p.nodeName().equals(n.name())) {
                    if (p.claim().hostOnly()) {
                        hostOnly.add(HostDto.HostTenantDto.of(p));
                    }
                    for (Slice s : p.slices()) {
                        byGpu.computeIfAbsent(s.gpuUuid(), k -> new ArrayList<>()).add(HoldingDto.of(p, s));
                    }
                }
            }
            List<GpuDto> gpus = n.gpus().stream().map(g -> GpuDto.of(g, byGpu.get(g.uuid()))).toList();
            return new NodeDto(plain.name(), plain.labels(), gpus, plain.defaultLink(), plain.links(), plain.host(), hostOnly);
        }

        Node toModel(String f) {
            String nm = required(f + ".name", name);
            String nf = "node[" + nm + "]";
            Node.Builder b = Node.builder(nm).labels(orEmpty(labels));
            List<GpuDto> gs = orEmpty(gpus);
            for (int i = 0; i < gs.size(); i++) {
                b.gpu(required(nf + ".gpus[" + i + "]", gs.get(i)).toModel(nf + ".gpus[" + i + "]"));
            }
            if (defaultLink != null) {
                b.defaultLink(parseLink(nf + ".defaultLink", defaultLink));
            }
            List<LinkDto> ls = orEmpty(links);
            for (int i = 0; i < ls.size(); i++) {
                LinkDto l = required(nf + ".links[" + i + "]", ls.get(i));
                String lf = nf + ".links[" + i + "]";
                b.link(required(lf + ".a", l.a()), required(lf + ".b", l.b()), parseLink(lf + ".link", l.link()));
            }
            if (host != null) {
                host.applyTo(b, nf);
            }
            return b.build();
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"schemaVersion", "rules", "nodes"})
    record InventoryDto(@Nullable Integer schemaVersion, @Nullable RulesDto rules, @Nullable List<NodeDto> nodes) {
    }

    // ------------------------------------------------------------ claims and placements

    @JsonInclude(JsonInclude.Include.NON_EMPTY)
    record SelectorsDto(@Nullable Set<String> includeModels, @Nullable Set<String> excludeModels,
                        @Nullable Set<String> includeUuids, @Nullable Set<String> excludeUuids,
                        @Nullable Map<String, String> nodeLabels, @Nullable Set<String> mustIncludeUuids,
                        @Nullable Set<Integer> mustIncludeIndices) {
        static @Nullable SelectorsDto of(Selectors s) {
            return s.isNone() ? null : new SelectorsDto(s.includeModels(), s.excludeModels(), s.includeUuids(),
                    s.excludeUuids(), s.nodeLabels(), s.mustIncludeUuids(), s.mustIncludeIndices());
        }

        Selectors toModel() {
            return new Selectors(orEmpty(includeModels), orEmpty(excludeModels), orEmpty(includeUuids),
                    orEmpty(excludeUuids), orEmpty(nodeLabels), orEmpty(mustIncludeUuids), orEmpty(mustIncludeIndices));
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    record LocalityDto(@Nullable String affinity, @Nullable String antiAffinity, @Nullable String exclusion) {
        static @Nullable LocalityDto of(Locality l) {
            return l.isNone() ? null : new LocalityDto(l.affinity().orElse(null), l.antiAffinity().orElse(null),
                    l.exclusion().orElse(null));
        }

        Locality toModel() {
            // the keys left out are unset; each one given is checked as Locality.of checks it
            Locality l = Locality.none();
            if (affinity != null) {
                l = l.withAffinity(affinity);
            }
            if (antiAffinity != null) {
                l = l.withAntiAffinity(antiAffinity);
            }
            if (exclusion != null) {
                l = l.withExclusion(exclusion);
            }
            return l;
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"tenant", "gpus", "memoryBytes", "memoryGiB", "computeRequest", "computeLimit", "priority", "exclusive",
            "selectors", "locality", "nodePolicy", "gpuPolicy", "numa", "priorityWithinClass", "host"})
    record ClaimDto(@Nullable String tenant, @Nullable Integer gpus, @Nullable Long memoryBytes,
                    @Nullable Long memoryGiB, @Nullable Integer computeRequest, @Nullable Integer computeLimit,
                    @Nullable String priority, @Nullable Boolean exclusive, @Nullable SelectorsDto selectors,
                    @Nullable LocalityDto locality, @Nullable String nodePolicy, @Nullable String gpuPolicy,
                    @Nullable String numa, @Nullable Integer priorityWithinClass, @Nullable HostDto host) {
        static ClaimDto of(Claim c) {
            boolean noGpuSizes = c.exclusive() || c.hostOnly();
            return new ClaimDto(c.tenantId(), c.gpuCount(), noGpuSizes ? null : c.memoryPerGpuBytes(), null,
                    c.hostOnly() ? null : c.computeRequest(), c.hostOnly() ? null : c.computeLimit(), c.priority().wireName(),
                    c.exclusive() ? Boolean.TRUE : null, SelectorsDto.of(c.selectors()), LocalityDto.of(c.locality()),
                    c.nodePolicy().map(PlacementPolicy::wireName).orElse(null),
                    c.gpuPolicy().map(PlacementPolicy::wireName).orElse(null),
                    c.numa() == NumaPolicy.PREFERRED ? null : c.numa().wireName(),
                    c.priorityWithinClass() == 0 ? null : c.priorityWithinClass(), HostDto.of(c.host()));
        }

        Claim toModel() {
            return toModel("claim[" + required("claim.tenant", tenant) + "]");
        }

        /** The claim; {@code f} names it in errors. */
        Claim toModel(String f) {
            String t = required("claim.tenant", tenant);
            Claim.Builder b = Claim.builder(t).gpus(gpus == null ? 1 : gpus);
            if (Boolean.TRUE.equals(exclusive)) {
                if (memoryBytes != null || memoryGiB != null) {
                    throw new InvalidValueException(f + ".memoryBytes", memoryBytes != null ? memoryBytes : memoryGiB,
                            "an exclusive claim takes the whole GPU; leave memory out");
                }
                if ((computeRequest != null && computeRequest != 100) || (computeLimit != null && computeLimit != 100)) {
                    throw new InvalidValueException(f + ".computeRequest", computeRequest,
                            "an exclusive claim has compute 100/100; leave compute out");
                }
                b.exclusive();
            } else if (gpus != null && gpus == 0) {
                // host-only: no GPU sizes unless written (then the claim's rule names them)
                b.memoryBytes(memory(f + ".memoryBytes", memoryBytes, memoryGiB, false));
                if (computeRequest != null || computeLimit != null) {
                    b.compute(computeRequest == null ? 0 : computeRequest, computeLimit == null ? 0 : computeLimit);
                }
            } else {
                b.memoryBytes(memory(f + ".memoryBytes", memoryBytes, memoryGiB, true));
                b.compute(computeRequest == null ? 0 : computeRequest, computeLimit == null ? 100 : computeLimit);
            }
            if (host != null) {
                host.applyTo(b, f);
            }
            if (priority != null) {
                b.priority(PriorityClass.fromName(f + ".priority", priority));
            }
            if (selectors != null) {
                b.selectors(selectors.toModel());
            }
            if (locality != null) {
                b.locality(locality.toModel());
            }
            if (nodePolicy != null) {
                b.nodePolicy(PlacementPolicy.fromName(f + ".nodePolicy", nodePolicy));
            }
            if (gpuPolicy != null) {
                b.gpuPolicy(PlacementPolicy.fromName(f + ".gpuPolicy", gpuPolicy));
            }
            if (numa != null) {
                b.numa(NumaPolicy.fromName(f + ".numa", numa));
            }
            if (priorityWithinClass != null) {
                b.priorityWithinClass(priorityWithinClass);
            }
            return b.build();
        }
    }

    @JsonPropertyOrder({"gpu", "memoryBytes", "computeRequest", "computeLimit"})
    record SliceDto(@Nullable String gpu, @Nullable Long memoryBytes, @Nullable Integer computeRequest,
                    @Nullable Integer computeLimit) {
        static SliceDto of(Slice s) {
            return new SliceDto(s.gpuUuid(), s.memoryBytes(), s.computeRequest(), s.computeLimit());
        }

        Slice toModel(String f) {
            return new Slice(required(f + ".gpu", gpu), required(f + ".memoryBytes", memoryBytes),
                    required(f + ".computeRequest", computeRequest), required(f + ".computeLimit", computeLimit));
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"claim", "node", "slices", "environment"})
    record PlacementDto(@Nullable ClaimDto claim, @Nullable String node, @Nullable List<SliceDto> slices,
                        @Nullable Map<String, String> environment) {
        static PlacementDto of(Placement p) {
            return new PlacementDto(ClaimDto.of(p.claim()), p.nodeName(), p.slices().stream().map(SliceDto::of).toList(),
                    p.environment());
        }

        Placement toModel() {
            Claim c = required("placement.claim", claim).toModel();
            String f = "placement[" + c.tenantId() + "]";
            List<Slice> ss = new ArrayList<>();
            List<SliceDto> in = orEmpty(slices);
            for (int i = 0; i < in.size(); i++) {
                ss.add(required(f + ".slices[" + i + "]", in.get(i)).toModel(f + ".slices[" + i + "]"));
            }
            // environment is derived; a stored one is ignored on purpose
            return new Placement(c, required(f + ".node", node), ss);
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"schemaVersion", "rules", "nodes", "placements"})
    record SnapshotDto(@Nullable Integer schemaVersion, @Nullable RulesDto rules, @Nullable List<NodeDto> nodes,
                       @Nullable List<PlacementDto> placements) {
    }
}
