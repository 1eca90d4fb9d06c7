package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void writesNestedValuesAndEscapes() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("s", "a\"b\\c\n\u0001");
        m.put("n", 8L);
        m.put("d", 1.5);
        m.put("nan", Double.NaN);
        m.put("b", true);
        m.put("null", null);
        m.put("list", List.of("x", 1));
        m.put("empty", Map.of());
        m.put("none", Arrays.asList());
        assertEquals("""
                {
                  "s": "a\\"b\\\\c\\n\\u0001",
                  "n": 8,
                  "d": 1.5,
                  "nan": null,
                  "b": true,
                  "null": null,
                  "list": [
                    "x",
                    1
                  ],
                  "empty": {},
                  "none": []
                }""", Json.write(m));
    }
}
