package io.qgpu.json;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/**
 * Issue 30, items 3 and 4: the JSON readers say what is wrong in the user's terms: no parser text
 * ({@code enable ... to allow}, {@code out of range of long}, {@code StreamReadConstraints},
 * {@code Unrecognized token}), no model field names, and the rule in words.
 */
class UserTermsTest {

    static final List<String> INTERNAL = List.of("enable", "out of range of", "StreamReadConstraints", "Unrecognized token",
            "was expecting (JSON", "`", "(code", "Source", "REDACTED", "com.fasterxml", "memoryPerGpuBytes", "ArithmeticException",
            "JsonReadFeature", "Non-standard token");

    static void userTerms(String message) {
        for (String s : INTERNAL) {
            assertFalse(message.contains(s), () -> "'" + s + "' in: " + message);
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "garbage | unexpected text 'garbage': a JSON value is a string in double quotes",
        "{\"a\": NaN} | NaN is not a JSON number",
        "{\"a\": 07} | a number may not start with 0",
        "{\"a\": 1 | the text ends before the JSON value does",
        "{\"a\" 1} | unexpected '1': expected a colon after the key",
        "{\"a\": 1,} | unexpected '}': expected a key in double quotes",
        "[1 2] | unexpected '2': expected a comma or ]",
    })
    void syntaxErrorsAreStatedInWords(String json, String expected) {
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> JsonInput.parse("f.json", json, ""));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        userTerms(e.getMessage());
    }

    @Test
    void aNumberLongerThanTheParserTakesIsStatedInWords() {
        String json = "{\"a\": " + "9".repeat(1200) + "}";
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> JsonInput.parse("f.json", json, ""));
        assertTrue(e.getMessage().contains("a number of 1200 digits; at most 1000 are accepted"), e.getMessage());
        userTerms(e.getMessage());
    }

    @Test
    void aRawLineBreakInAStringIsStatedInWords() {
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> JsonInput.parse("f.json", "{\"a\": \"x\ny\"}", ""));
        assertTrue(e.getMessage().contains("raw control character"), e.getMessage());
        userTerms(e.getMessage());
    }

    @Test
    void memoryNearLongMaxIsRefusedWithTheKeyNotAnArithmeticError() {
        InvalidValueException gib = assertThrows(InvalidValueException.class,
                () -> GpuDevice.builder("GPU-1").memoryGiB(Long.MAX_VALUE));
        assertTrue(gib.getMessage().startsWith("gpu[GPU-1].memoryGiB = 9223372036854775807: must be between 0 and 8589934591"),
                gib.getMessage());
        String inv = "{\"nodes\": [{\"name\": \"n\", \"gpus\": [{\"uuid\": \"g\", \"index\": 0, \"memoryGiB\": 9223372036854775807}]}]}";
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(JsonInput.parse("inv.json", inv, "")));
        assertTrue(e.getMessage().contains("nodes[0].gpus[0].memoryGiB = 9223372036854775807: is more memory than any GPU has:"
                + " at most 1048576 GiB (1 PiB)"), e.getMessage());
        userTerms(e.getMessage());
        String bytes = "{\"nodes\": [{\"name\": \"n\", \"gpus\": [{\"uuid\": \"g\", \"index\": 0, \"memoryBytes\": 9223372036854775807}]}]}";
        QgpuJsonException b = assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(JsonInput.parse("inv.json", bytes, "")));
        assertTrue(b.getMessage().contains("nodes[0].gpus[0].memoryBytes = 9223372036854775807: is more memory than any GPU has:"
                + " at most 1125899906842624 bytes (1 PiB)"), b.getMessage());
        userTerms(b.getMessage());
        // the engine itself takes such a GPU (built in code, as the inventory reader no longer reads one)
        Inventory big = new Inventory(GranularityRules.ofDefaults(), List.of(Node.builder("n")
                .gpu(GpuDevice.builder("g").index(0).memoryBytes(Long.MAX_VALUE).build()).build()));
        String claims = "[{\"tenant\": \"a\", \"memoryBytes\": 9223372036854775807, \"gpus\": 2}]";
        List<Claim> read = QgpuJson.readClaims(JsonInput.parse("claims.json", claims, "claims"));
        io.qgpu.api.PlacementResult r = io.qgpu.core.placement.PlacementEngine.create(big.ledger()).place(read.get(0));
        assertTrue(r instanceof io.qgpu.api.PlacementResult.Unschedulable, "refused with reasons, not an ArithmeticException: " + r);
        assertTrue(big.nodes().get(0).gpus().get(0).memoryBytes() > 0);
        String host = "[{\"tenant\": \"a\", \"gpus\": 0, \"host\": {\"memoryGiB\": 9223372036854775807}}]";
        QgpuJsonException h = assertThrows(QgpuJsonException.class, () -> QgpuJson.readClaims(JsonInput.parse("claims.json", host, "claims")));
        assertTrue(h.getMessage().contains("claims[0].host.memoryGiB = 9223372036854775807: must be between 0 and 8589934591"), h.getMessage());
        userTerms(h.getMessage());
    }

    @Test
    void namesLongerThanAKubernetesNameAreRefused() {
        String longName = "n".repeat(254);
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> Node.builder(longName).build());
        assertTrue(e.getMessage().contains("is 254 characters long; at most 253 are allowed"), e.getMessage());
        Node.builder("n".repeat(253)).build();
        assertThrows(InvalidValueException.class, () -> Claim.builder("t".repeat(318)).memoryGiB(1).build());
        Claim.builder("ns/" + "t".repeat(253)).memoryGiB(1).build();
        String inv = "{\"nodes\": [{\"name\": \"" + longName + "\", \"gpus\": []}]}";
        QgpuJsonException j = assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(JsonInput.parse("inv.json", inv, "")));
        assertTrue(j.getMessage().contains("nodes[0].name"), j.getMessage());
        assertTrue(j.getMessage().contains("at most 253"), j.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "[{\"tenant\": \"a\", \"memoryGiB\": 1, \"gpus\": 1.6e1}] | claims[0].gpus = 1.6e1: must be a whole number",
        "[{\"tenant\": \"a\", \"memoryGiB\": 1, \"computeLimit\": 0.5e2}] | claims[0].computeLimit = 0.5e2: must be a whole number",
        "[{\"tenant\": \"a\", \"memoryGiB\": 1, \"computeRequest\": 1e400}] | claims[0].computeRequest = 1e400:",
        "[{\"tenant\": \"a\", \"memoryGiB\": 99999999999999999999}] | claims[0].memoryGiB = 99999999999999999999: the number is too large: a whole number here is between -9223372036854775808 and 9223372036854775807",
        "[{\"tenant\": \"a\", \"memoryGiB\": 1, \"selectors\": {\"mustIncludeUuids\": [\"x\", \"y\"]}}] | claims[0].selectors.mustIncludeUuids = [\"x\",\"y\"]: names more GPUs than the claim asks for (1)",
        "[{\"tenant\": \"a\", \"memoryGiB\": 1, \"selectors\": {\"mustIncludeIndices\": [0, 1]}}] | claims[0].selectors.mustIncludeIndices = [0,1]: names more GPUs than the claim asks for (1)",
    })
    void valuesAreShownAsWrittenAndKeysAsTheFileNamesThem(String json, String expected) {
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> QgpuJson.readClaims(JsonInput.parse("c.json", json, "claims")));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        userTerms(e.getMessage());
        assertFalse(e.getMessage().contains("Infinity") || e.getMessage().contains("16.0") || e.getMessage().contains("mustInclude ")
                || e.getMessage().contains("mustInclude ="), e.getMessage());
    }
}
