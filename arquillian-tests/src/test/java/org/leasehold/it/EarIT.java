package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.it.Lookups.micros;
import static org.leasehold.it.Lookups.uid;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import jakarta.ejb.EJB;
import jakarta.ejb.EJBException;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.shrinkwrap.api.ShrinkWrap;
import org.jboss.shrinkwrap.api.spec.EnterpriseArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.it.app.EarLedger;
import org.leasehold.it.check.Stored;
import org.leasehold.lease.Lease;
import org.leasehold.store.check.LogChecker;

/**
 * WildFly only (Payara Micro refuses EARs): the unchanged {@code leasehold.rar} inside an application's EAR, beside its
 * war, with the connection factory defined by the application ({@code @ConnectionFactoryDefinition} on the EAR's
 * adapter, {@code #leasehold}). The adapter deployed on its own stays deployed on the same server; each application
 * sees only its own copy.
 */
@ExtendWith(ArquillianExtension.class)
class EarIT {
    @Deployment
    static EnterpriseArchive app() {
        return ShrinkWrap.create(EnterpriseArchive.class, "leasehold-app.ear")
                .addAsModule(Deployments.microFile("leasehold.rar"), "leasehold.rar")
                .addAsModule(Deployments.plainWar("ear-web.war").addClasses(EarIT.class, EarLedger.class));
    }

    @EJB
    private EarLedger ledger;

    private static List<String> readThroughAdapter(String name) throws Exception {
        LeaseConnectionFactory f = Lookups.lookup(EarLedger.FACTORY);
        List<String> out = new ArrayList<>();
        try (LeaseConnection c = f.getConnection();
                MessageStream s = c.read(ReadRequest.all(EarLedger.LOG).underAnyOf(java.util.Set.of(name)))) {
            Message m;
            while ((m = s.next()) != null) {
                out.add(new String(m.payload(), StandardCharsets.UTF_8));
            }
        }
        return out;
    }

    @Test
    void aFactoryDefinedOnTheAdapterInTheEarCommitsAndRollsBack() throws Exception {
        String run = uid();
        String name = "account/" + run;
        Lease first = ledger.record(name, run + "-committed");
        EJBException failed = assertThrows(EJBException.class, () -> ledger.recordThenFail(name, run + "-rolled-back"));
        assertTrue(String.valueOf(failed.getCause()).contains("forced failure"), () -> "cause: " + failed.getCause());
        Lease second = ledger.record(name, run + "-after");

        assertEquals(List.of(run + "-committed", run + "-after"), readThroughAdapter(name));
        LogChecker.Result r = Stored.log(Stored.itRoot(), EarLedger.LOG);
        assertEquals(List.of(), r.violations(), "the log breaks the format");
        assertEquals(List.of(), Stored.withText(r, run + "-rolled-back"), "a rolled-back message is never stored");
        List<LogChecker.Msg> committed = Stored.withText(r, run + "-committed");
        assertEquals(1, committed.size(), () -> "stored once: " + committed);
        assertEquals(first.grant(name).generation(), committed.get(0).generationOf(name));
        assertEquals(committed.get(0).timestamp(), micros(second.grant(name).floor()),
                "the next transaction's floor is the committed one's watermark (the rollback published none)");
    }

    @Test
    void theApplicationUsesTheAdapterInsideItsEar() throws Exception {
        String loader = String.valueOf(LeaseConnectionFactory.class.getClassLoader());
        assertTrue(loader.contains("leasehold-app.ear"), () -> "the api should come from the EAR's adapter: " + loader);
        Object factory = Lookups.lookup(EarLedger.FACTORY);
        assertTrue(factory instanceof LeaseConnectionFactory, () -> factory + " from "
                + factory.getClass().getClassLoader() + " is not a LeaseConnectionFactory of " + loader);
    }
}
