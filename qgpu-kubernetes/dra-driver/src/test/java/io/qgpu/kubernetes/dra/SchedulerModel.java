package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.CapacityRequestPolicy;
import io.fabric8.kubernetes.api.model.resource.v1.CapacityRequestPolicyRange;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacity;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the tests take kube-scheduler to do with a device's consumable capacity, as the {@code resource.k8s.io/v1}
 * API describes it, and what they take the API server to accept in a {@code requestPolicy}; written for these
 * tests, so that the published slice is checked against those rules rather than against the driver's own code.
 *
 * <p>Allocation of one share of a device that allows multiple allocations: a capacity the request names is
 * rounded up to the policy (to the smallest of {@code validValues} at least the request; in a {@code validRange}
 * to {@code min} when below it, else to {@code min + n * step}; refused above {@code max} or all valid values);
 * a capacity it does not name consumes the policy's {@code default}, or the whole capacity without a policy;
 * the device is not eligible when the sum over its allocations would exceed a capacity.
 *
 * <p>Thread safety: not thread-safe (a {@link Device}'s consumption so far is kept per instance).
 */
final class SchedulerModel {
    private final Map<String, Map<String, BigDecimal>> consumed = new HashMap<>();

    /**
     * Allocates a share of the device: its {@code consumedCapacity}, or empty when the device cannot take it.
     *
     * @param requests the request's {@code capacity.requests}
     */
    Optional<Map<String, Quantity>> allocate(Device d, Map<String, Quantity> requests) {
        for (String name : requests.keySet()) {
            if (!d.getCapacity().containsKey(name)) {
                return Optional.empty();
            }
        }
        Map<String, BigDecimal> sum = consumed.computeIfAbsent(d.getName(), k -> new HashMap<>());
        Map<String, Quantity> out = new LinkedHashMap<>();
        for (Map.Entry<String, DeviceCapacity> e : d.getCapacity().entrySet()) {
            BigDecimal value = e.getValue().getValue().getNumericalAmount();
            Optional<BigDecimal> amount = amount(e.getValue(), requests.get(e.getKey()));
            if (amount.isEmpty() || sum.getOrDefault(e.getKey(), BigDecimal.ZERO).add(amount.get()).compareTo(value) > 0) {
                return Optional.empty();
            }
            out.put(e.getKey(), new Quantity(amount.get().toPlainString()));
        }
        out.forEach((k, v) -> sum.merge(k, v.getNumericalAmount(), BigDecimal::add));
        return Optional.of(out);
    }

    /** What one capacity consumes for this request (null: not requested); empty when the policy refuses it. */
    static Optional<BigDecimal> amount(DeviceCapacity c, Quantity requested) {
        CapacityRequestPolicy p = c.getRequestPolicy();
        BigDecimal value = c.getValue().getNumericalAmount();
        if (requested == null) {
            return Optional.of(p != null && p.getDefault() != null ? p.getDefault().getNumericalAmount() : value);
        }
        BigDecimal r = requested.getNumericalAmount();
        if (p == null) {
            return Optional.of(r);
        }
        if (p.getValidValues() != null && !p.getValidValues().isEmpty()) {
            return p.getValidValues().stream().map(Quantity::getNumericalAmount).filter(v -> v.compareTo(r) >= 0).min(BigDecimal::compareTo);
        }
        CapacityRequestPolicyRange range = p.getValidRange();
        if (range == null) {
            return Optional.of(r);
        }
        BigDecimal min = range.getMin().getNumericalAmount();
        BigDecimal out = r.compareTo(min) < 0 ? min : r;
        if (range.getStep() != null && out.compareTo(min) > 0) {
            BigDecimal step = range.getStep().getNumericalAmount();
            BigDecimal n = out.subtract(min).divide(step, 0, RoundingMode.CEILING);
            out = min.add(n.multiply(step));
        }
        if (range.getMax() != null && out.compareTo(range.getMax().getNumericalAmount()) > 0) {
            return Optional.empty();
        }
        return Optional.of(out);
    }

    /**
     * What the API server refuses in a device's capacities (empty: it accepts them): at most one of
     * {@code validValues} and {@code validRange}; with either a {@code default}; {@code validValues} ascending, at
     * most 10, each within the capacity, the default among them; a {@code validRange} with {@code min} within the
     * capacity and not above the default, {@code max} (if set) within the capacity and not below {@code min} or
     * the default, {@code min + step} within the capacity, the default and {@code max} on {@code min + n * step};
     * a policy only on a device with {@code allowMultipleAllocations}; at most 32 attributes and capacities.
     */
    static List<String> refusedByApiServer(Device d) {
        List<String> errors = new ArrayList<>();
        int entries = (d.getAttributes() == null ? 0 : d.getAttributes().size()) + d.getCapacity().size();
        if (entries > 32) {
            errors.add(d.getName() + ": " + entries + " attributes and capacities, at most 32");
        }
        for (Map.Entry<String, DeviceCapacity> e : d.getCapacity().entrySet()) {
            String at = d.getName() + ".capacity[" + e.getKey() + "].requestPolicy";
            CapacityRequestPolicy p = e.getValue().getRequestPolicy();
            if (p == null) {
                continue;
            }
            if (!Boolean.TRUE.equals(d.getAllowMultipleAllocations())) {
                errors.add(at + ": allowMultipleAllocations must be true");
            }
            BigDecimal value = e.getValue().getValue().getNumericalAmount();
            boolean values = p.getValidValues() != null && !p.getValidValues().isEmpty();
            if (values && p.getValidRange() != null) {
                errors.add(at + ": validValues and validRange");
                continue;
            }
            if ((values || p.getValidRange() != null) && p.getDefault() == null) {
                errors.add(at + ".default: required");
                continue;
            }
            if (values) {
                List<BigDecimal> v = p.getValidValues().stream().map(Quantity::getNumericalAmount).toList();
                if (v.size() > 10) {
                    errors.add(at + ".validValues: more than 10");
                }
                for (int i = 0; i + 1 < v.size(); i++) {
                    if (v.get(i).compareTo(v.get(i + 1)) > 0) {
                        errors.add(at + ".validValues: not ascending");
                    }
                }
                v.stream().filter(x -> x.compareTo(value) > 0).forEach(x -> errors.add(at + ".validValues: " + x + " above the capacity"));
                BigDecimal def = p.getDefault().getNumericalAmount();
                if (v.stream().noneMatch(x -> x.compareTo(def) == 0)) {
                    errors.add(at + ".validValues: the default " + def + " is not among them");
                }
            } else if (p.getValidRange() != null) {
                CapacityRequestPolicyRange r = p.getValidRange();
                BigDecimal def = p.getDefault().getNumericalAmount();
                if (r.getMin() == null) {
                    errors.add(at + ".validRange.min: required");
                    continue;
                }
                BigDecimal min = r.getMin().getNumericalAmount();
                if (min.compareTo(value) > 0) {
                    errors.add(at + ".validRange.min: above the capacity");
                }
                if (def.compareTo(min) < 0) {
                    errors.add(at + ".validRange.min: the default is below it");
                }
                if (r.getMax() != null) {
                    BigDecimal max = r.getMax().getNumericalAmount();
                    if (min.compareTo(max) > 0 || max.compareTo(value) > 0 || def.compareTo(max) > 0) {
                        errors.add(at + ".validRange.max: " + max + " below min or the default, or above the capacity");
                    }
                }
                if (r.getStep() != null) {
                    BigDecimal step = r.getStep().getNumericalAmount();
                    if (min.add(step).compareTo(value) > 0) {
                        errors.add(at + ".validRange.step: min + step " + min.add(step) + " is above the capacity " + value);
                    }
                    if (def.subtract(min).remainder(step).signum() != 0) {
                        errors.add(at + ".validRange.step: the default " + def + " is not min + n * step");
                    }
                    if (r.getMax() != null && r.getMax().getNumericalAmount().subtract(min).remainder(step).signum() != 0) {
                        errors.add(at + ".validRange.step: max is not min + n * step");
                    }
                }
            }
        }
        return errors;
    }
}
