package io.qgpu.kubernetes.allocator;

import static io.qgpu.kubernetes.allocator.Reviews.claim;
import static io.qgpu.kubernetes.allocator.Reviews.firstAvailable;
import static io.qgpu.kubernetes.allocator.Reviews.template;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodSpecBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimSpec;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The three verdicts on a pod's claims, as the webhook and the allocator's controller read them. */
class ClaimScopeTest {
    final Reviews.Claims claims = new Reviews.Claims().add(claim("gpu", DraNames.DEVICE_CLASS)).add(claim("nic", "nic.example.com"))
            .add(template("share", DraNames.DEVICE_CLASS));
    final ClaimScope scope = new ClaimScope(claims, List.of(DraNames.DEVICE_CLASS));

    static PodSpec claims(String... claimNames) {
        PodSpecBuilder b = new PodSpecBuilder();
        for (String n : claimNames) {
            b.addNewResourceClaim().withName("c-" + n).withResourceClaimName(n).endResourceClaim();
        }
        return b.build();
    }

    @Test
    void verdicts() {
        assertEquals(ClaimScope.Kind.IN_SCOPE, scope.of("default", claims("nic", "gpu")).kind());
        assertEquals(new ClaimScope.Result(ClaimScope.Kind.OUT_OF_SCOPE, "no claim of the pod requests device class gpu.qgpu.io"),
                scope.of("default", claims("nic")));
        assertEquals(new ClaimScope.Result(ClaimScope.Kind.UNRESOLVED, "claim default/later is not found (it may be created after the pod)"),
                scope.of("default", claims("nic", "later")));
        assertEquals(ClaimScope.Kind.UNRESOLVED, scope.of("other", claims("gpu")).kind(), "claims are looked up in the pod's namespace");
        assertEquals(new ClaimScope.Result(ClaimScope.Kind.OUT_OF_SCOPE, "the pod names no resource claims"), scope.of("default", null));
        PodSpec byTemplate = new PodSpecBuilder().addNewResourceClaim().withName("t").withResourceClaimTemplateName("share").endResourceClaim()
                .build();
        assertEquals(ClaimScope.Kind.IN_SCOPE, scope.of("default", byTemplate).kind());
    }

    @Test
    void usedReadsExactlyAndFirstAvailableAndSkipsRequestsWithoutAClass() {
        Set<String> ours = Set.of(DraNames.DEVICE_CLASS);
        assertEquals(Optional.of(DraNames.DEVICE_CLASS), ClaimScope.used(claim("a", DraNames.DEVICE_CLASS).getSpec(), ours));
        assertEquals(Optional.of(DraNames.DEVICE_CLASS), ClaimScope.used(firstAvailable("b", "x.example.com", DraNames.DEVICE_CLASS)
                .getSpec(), ours));
        assertEquals(Optional.empty(), ClaimScope.used(firstAvailable("c", (String) null).getSpec(), ours));
        assertEquals(Optional.empty(), ClaimScope.used(claim("d", null).getSpec(), ours));
        assertEquals(Optional.empty(), ClaimScope.used(new ResourceClaimSpec(), ours));
        assertEquals(Optional.empty(), ClaimScope.used(null, ours));
    }

    @Test
    void aScopeNeedsAClass() {
        assertEquals("deviceClasses: at least one device class is needed",
                assertThrows(IllegalArgumentException.class, () -> new ClaimScope(claims, List.of())).getMessage());
    }
}
