package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import jakarta.ejb.EJB;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.container.test.api.RunAsClient;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.leasehold.it.app.PrincipalClerkEjb;
import org.leasehold.it.app.PrincipalWriterEjb;
import org.leasehold.it.audit.Verified;
import org.leasehold.it.check.Stored;
import org.leasehold.lease.LeaseServiceUnavailableException;

/**
 * The principal in the witnesses on a running server whose security is configured as an operator would (PAYARA.md,
 * "Who took a lease"; WILDFLY.md): the connections of {@code eis/leasehold/principal} are to be signed on as the
 * resource principal {@code ledger-writer}, which the adapter's embedded engine then names in the witness of every
 * lease taken through them; the witnesses are read back in the test JVM from the stored frames. On WildFly the
 * connection definition authenticates through an Elytron authentication context, whoever calls: every witness names
 * {@code ledger-writer}. On Payara Micro the pool has a connector security map from the caller {@code alice} (a
 * {@code @RunAs} identity) to {@code ledger-writer}, and Payara Micro does not apply it: its connector runtime maps
 * callers only when it runs as a full server, and Payara Micro runs embedded, so the container passes the pool's default
 * principal (an empty user name), and the witnesses name the pool's {@code ResourcePrincipal}, {@code payara-writer},
 * for both callers. This test pins that documented limit; if a Payara Micro release applies security maps, the clerk's
 * witness names {@code ledger-writer}, the test fails here and the documentation must change.
 */
@ExtendWith(ArquillianExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PrincipalIT {
    private static final String LOG = "principal";
    private static final String RESOURCE_PRINCIPAL = "ledger-writer";
    private static final String AS_CLERK = "written as the clerk";
    private static final String AS_CALLER = "written as the test's caller";
    /** The {@code ResourcePrincipal} of Payara's pool: what the witnesses name when the container names nobody. */
    private static final String PAYARA_POOL_PRINCIPAL = "payara-writer";

    /** The run-as principal of the clerk's role (Payara reads it from this descriptor; WildFly ignores it). */
    static final String GLASSFISH_EJB_JAR = """
            <!DOCTYPE glassfish-ejb-jar PUBLIC "-//GlassFish.org//DTD GlassFish Application Server 3.1 EJB 3.1//EN"
                "http://glassfish.org/dtds/glassfish-ejb-jar_3_1-1.dtd">
            <glassfish-ejb-jar>
              <security-role-mapping>
                <role-name>ledger-clerk</role-name>
                <principal-name>alice</principal-name>
              </security-role-mapping>
              <enterprise-beans>
                <ejb>
                  <ejb-name>PrincipalClerkEjb</ejb-name>
                  <principal>
                    <name>alice</name>
                  </principal>
                </ejb>
              </enterprise-beans>
            </glassfish-ejb-jar>
            """;

    @Deployment
    static WebArchive app() {
        return Deployments.plainWar("principal.war")
                .addClasses(PrincipalClerkEjb.class, PrincipalWriterEjb.class)
                .setManifest(new StringAsset(Deployments.ADAPTER_DEPENDENCY))
                .addAsWebInfResource(new StringAsset(Deployments.jbossWeb(PrincipalWriterEjb.FACTORY)), "jboss-web.xml")
                .addAsWebInfResource(new StringAsset(GLASSFISH_EJB_JAR), "glassfish-ejb-jar.xml");
    }

    @EJB
    private PrincipalClerkEjb clerk;
    @EJB
    private PrincipalWriterEjb writer;

    /**
     * In the server: one transaction as the clerk, one as the test's own (unauthenticated) caller. On Payara the clerk's
     * calls run as {@code alice}, the principal its security map names (WildFly names a {@code @RunAs} identity only
     * through its own annotation, and maps nothing by caller here).
     */
    @Test
    @Order(1)
    void transactionsRunAsTheirCallers() throws Exception {
        boolean wildFly = System.getProperty("jboss.home.dir") != null;
        String server = wildFly ? "wildfly" : "payara";
        String clerkName = afterQuietPeriod(() -> clerk.record("principal/clerk", AS_CLERK + " on " + server));
        String callerName = writer.record("principal/caller", AS_CALLER + " on " + server);
        System.out.println("PrincipalIT (" + server + "): the clerk's calls run as '" + clerkName + "', the test's as '"
                + callerName + "'");
        if (!wildFly) {
            assertEquals("alice", clerkName, "the clerk's @RunAs principal, from glassfish-ejb-jar.xml");
            assertNotEquals("alice", callerName, "the test's own caller is not the clerk");
        }
    }

    /** A call that retries while the log's embedded lease service grants nothing yet (its quiet period). */
    interface Call {
        String run() throws Exception;
    }

    /**
     * {@code call}, again while the log's lease service is in its quiet period: when this test runs on WildFly soon
     * after Payara Micro's run wrote the same log, the new incarnation grants nothing until every lease of the last
     * could be over (max lease + grace, about 12 s).
     */
    private static String afterQuietPeriod(Call call) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                return call.run();
            } catch (LeaseServiceUnavailableException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
    }

    /** In the test JVM: the stored witnesses name the resource principal the server signed each connection on as. */
    @Test
    @Order(2)
    @RunAsClient
    void theWitnessesNameTheResourcePrincipal() throws Exception {
        // Both servers write the log (Payara Micro's run, then WildFly's): each reads back the messages it wrote.
        String clerkText = AS_CLERK + " on " + Deployments.server();
        String callerText = AS_CALLER + " on " + Deployments.server();
        Map<String, Set<String>> principals = new TreeMap<>(Verified.principals(Stored.itRoot(), LOG));
        principals.keySet().retainAll(Set.of(clerkText, callerText));
        System.out.println("PrincipalIT (" + Deployments.server() + "): principals in the witnesses of log '" + LOG
                + "': " + principals);
        if (Deployments.onWildFly()) {
            assertEquals(Map.of(clerkText, Set.of(RESOURCE_PRINCIPAL), callerText, Set.of(RESOURCE_PRINCIPAL)), principals,
                    "WildFly's authentication context signs every caller on as the resource principal");
        } else {
            assertEquals(Map.of(clerkText, Set.of(PAYARA_POOL_PRINCIPAL), callerText, Set.of(PAYARA_POOL_PRINCIPAL)),
                    principals, "Payara Micro applies no connector security map: the container passes the pool's default "
                            + "principal, an empty user name, and the witnesses name the pool's ResourcePrincipal");
        }
    }
}
