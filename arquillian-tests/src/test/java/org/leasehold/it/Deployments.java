package org.leasehold.it;

import java.io.File;

import org.jboss.shrinkwrap.api.ShrinkWrap;
import org.jboss.shrinkwrap.api.asset.EmptyAsset;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.leasehold.it.app.ParentWatchdog;
import org.leasehold.it.check.JournalReader;
import org.leasehold.it.check.Stored;
import org.leasehold.store.check.LogChecker;

/**
 * The test applications, the same for Payara Micro and WildFly. None bundles the Leasehold api: the deployed resource
 * adapter (or, in an EAR, the adapter beside the war) provides it, and a second copy would only risk two classes of
 * one name.
 */
final class Deployments {
    private Deployments() {
    }

    /**
     * A war with the watchdog, the independent checkers and CDI enabled. Its manifest declares the dependency on the
     * adapter deployed on its own as {@code leasehold.rar}, which WildFly needs to give the application the adapter's
     * classes (Payara gives them to every application and ignores the header).
     */
    static WebArchive war(String name) {
        return plainWar(name)
                .setManifest(new StringAsset(ADAPTER_DEPENDENCY))
                .addAsWebInfResource(new StringAsset(jbossWeb("eis/leasehold/tx", "eis/leasehold/cdi",
                        "eis/leasehold/owned-a", "eis/leasehold/owned-b", "eis/leasehold/audit",
                        "jdbc/leasehold-it")), "jboss-web.xml");
    }

    /**
     * WildFly binds resources only under {@code java:} names and resolves a relative name such as
     * {@code eis/leasehold/tx} in the application's {@code java:comp/env}: this descriptor maps the names the test
     * applications use to the server's resources (Payara ignores it and finds the names as they are).
     */
    static String jbossWeb(String... names) {
        StringBuilder b = new StringBuilder("<jboss-web xmlns=\"urn:jboss:jakartaee:1.0\" version=\"1.0\">\n");
        for (String name : names) {
            b.append(resourceRef(name, name.startsWith("jdbc/") ? "javax.sql.DataSource"
                    : "org.leasehold.connector.LeaseConnectionFactory"));
        }
        return b.append("</jboss-web>\n").toString();
    }

    private static String resourceRef(String name, String type) {
        return "  <resource-ref>\n    <res-ref-name>" + name + "</res-ref-name>\n    <res-type>" + type
                + "</res-type>\n    <jndi-name>java:/" + name + "</jndi-name>\n  </resource-ref>\n";
    }

    /** A war with the watchdog, the independent checkers and CDI enabled, and nothing about where the adapter is. */
    static WebArchive plainWar(String name) {
        return ShrinkWrap.create(WebArchive.class, name)
                .addClasses(ParentWatchdog.class, Stored.class, LogChecker.class, JournalReader.class, Lookups.class,
                        ServerLog.class)
                .addAsWebInfResource(EmptyAsset.INSTANCE, "beans.xml");
    }

    /** The manifest of an application that uses the adapter deployed on its own on WildFly. */
    static final String ADAPTER_DEPENDENCY = "Manifest-Version: 1.0\nDependencies: deployment.leasehold.rar\n";

    /** The server the tests run on: {@code payara} or {@code wildfly} (set by the failsafe execution). */
    static String server() {
        String s = System.getProperty("leasehold.it.server");
        if (!"payara".equals(s) && !"wildfly".equals(s)) {
            throw new IllegalStateException("the system property leasehold.it.server is '" + s + "', expected payara or "
                    + "wildfly: run the tests through Maven (each failsafe execution sets it)");
        }
        return s;
    }

    static boolean onWildFly() {
        return server().equals("wildfly");
    }

    /** A file that the build copied next to Payara Micro (the cdi jar, the H2 driver, the .rar). */
    static File microFile(String name) {
        String dir = System.getProperty("leasehold.it.micro.dir");
        if (dir == null) {
            throw new IllegalStateException("the system property leasehold.it.micro.dir is not set: run the tests "
                    + "through Maven (failsafe passes it)");
        }
        File f = new File(dir, name);
        if (!f.isFile()) {
            throw new IllegalStateException(f + " is missing: the build copies it in process-test-resources");
        }
        return f;
    }
}
