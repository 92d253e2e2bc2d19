package org.leasehold.cdi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

class NameTemplatesTest {

    @Test
    void placeholdersBecomeArguments() {
        assertEquals(List.of("account/7", "account/9", "fixed"),
                NameTemplates.expand(new String[] {"account/{0}", "account/{1}", "fixed"}, new Object[] {7, "9"}, null));
        assertEquals(List.of("t/3/u/3"), NameTemplates.expand(new String[] {"t/{0}/u/{0}"}, new Object[] {3L}, null));
    }

    @Test
    void mistakesAreExplained() {
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> NameTemplates.expand(new String[] {"a/{2}"}, new Object[] {1}, null)).getMessage()
                .contains("uses {2}, but the method has 1 argument"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> NameTemplates.expand(new String[] {"a/{0}"}, new Object[] {null}, null)).getMessage()
                .contains("argument 0 is null"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> NameTemplates.expand(new String[] {"a/{x}"}, new Object[] {1}, null)).getMessage()
                .contains("argument numbers"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> NameTemplates.expand(new String[] {"a/{0"}, new Object[] {1}, null)).getMessage()
                .contains("unclosed"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> NameTemplates.expand(new String[0], new Object[0], null)).getMessage().contains("names no lease"));
    }
}
