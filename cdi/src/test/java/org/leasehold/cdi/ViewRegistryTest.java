package org.leasehold.cdi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.reflect.Type;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import jakarta.enterprise.inject.AmbiguousResolutionException;
import jakarta.enterprise.inject.UnsatisfiedResolutionException;
import jakarta.enterprise.util.TypeLiteral;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.bag.ViewDefinition;

/** Which definition an injected view gets: by name, by state type, and what it says when there is none or several. */
class ViewRegistryTest {
    private static final Type BALANCES = new TypeLiteral<TreeMap<String, Long>>() { }.getType();
    private static final Type COUNTS = new TypeLiteral<Map<String, Integer>>() { }.getType();

    private static <S> ViewDefinition<S> named(String name) {
        return new ViewDefinition<>() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public String version() {
                return "1";
            }

            @Override
            public S initial() {
                return null;
            }

            @Override
            public S apply(S state, Message message) {
                return state;
            }

            @Override
            public byte[] encode(S state) {
                return new byte[0];
            }

            @Override
            public S decode(byte[] bytes) {
                return null;
            }
        };
    }

    @Test
    void aViewIsFoundByNameOrByItsStateTypeAndOtherwiseTheMessageListsTheViews() {
        ViewDefinition<?> balances = named("balances");
        ViewDefinition<?> counts = named("counts");
        List<ViewRegistry.Defined> defined = List.of(new ViewRegistry.Defined(balances, BALANCES),
                new ViewRegistry.Defined(counts, COUNTS));
        assertSame(balances, ViewRegistry.resolve(defined, "balances", Object.class, "A.f"));
        assertSame(counts, ViewRegistry.resolve(defined, null, COUNTS, "A.f"));
        assertSame(balances, ViewRegistry.resolve(defined, null, new TypeLiteral<TreeMap<String, Long>>() { }.getType(),
                "A.f"), "a type equal to the bean's, written elsewhere");

        UnsatisfiedResolutionException unknown = assertThrows(UnsatisfiedResolutionException.class,
                () -> ViewRegistry.resolve(defined, "balance", Object.class, "org.example.Bank.view"));
        assertEquals("the LeaseView injected at org.example.Bank.view asks for the view named 'balance', and no "
                + "ViewDefinition bean of the application defines it (the application's views, name=state: "
                + "{balances=java.util.TreeMap<java.lang.String, java.lang.Long>, counts=java.util.Map<java.lang.String, "
                + "java.lang.Integer>}): declare the definition as a bean (for example an @ApplicationScoped class "
                + "implementing ViewDefinition<S>), or name an existing view with @View(\"...\")", unknown.getMessage());
        UnsatisfiedResolutionException noType = assertThrows(UnsatisfiedResolutionException.class,
                () -> ViewRegistry.resolve(defined, null, new TypeLiteral<TreeMap<String, Integer>>() { }.getType(),
                        "A.f"));
        assertEquals(true, noType.getMessage().contains("asks for a view whose state is java.util.TreeMap<java.lang."
                + "String, java.lang.Integer>"), noType.getMessage());

        ViewDefinition<?> other = named("other-balances");
        AmbiguousResolutionException two = assertThrows(AmbiguousResolutionException.class, () -> ViewRegistry.resolve(
                List.of(defined.get(0), new ViewRegistry.Defined(other, BALANCES)), null, BALANCES, "A.f"));
        assertEquals(true, two.getMessage().contains("2 ViewDefinition beans define one (balances (")
                && two.getMessage().endsWith("choose one with @View(\"...\")"), two.getMessage());
    }
}
