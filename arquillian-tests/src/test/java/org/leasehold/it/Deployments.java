package org.leasehold.it;

import java.io.File;

import org.jboss.shrinkwrap.api.ShrinkWrap;
import org.jboss.shrinkwrap.api.asset.EmptyAsset;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.leasehold.it.app.ParentWatchdog;
import org.leasehold.it.check.JournalReader;
import org.leasehold.it.check.Stored;
import org.leasehold.store.check.LogChecker;

/**
 * The test applications. None bundles the Leasehold api: the deployed resource adapter provides it to every
 * application, and a second copy would only risk two classes of one name.
 */
final class Deployments {
    private Deployments() {
    }

    /** A war with the watchdog, the independent checkers and CDI enabled. */
    static WebArchive war(String name) {
        return ShrinkWrap.create(WebArchive.class, name)
                .addClasses(ParentWatchdog.class, Stored.class, LogChecker.class, JournalReader.class, Lookups.class)
                .addAsWebInfResource(EmptyAsset.INSTANCE, "beans.xml");
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
