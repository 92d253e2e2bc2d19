package org.leasehold.it.app;

import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import jakarta.annotation.PostConstruct;
import jakarta.annotation.PreDestroy;
import jakarta.annotation.Resource;
import jakarta.ejb.Singleton;
import jakarta.ejb.Startup;
import jakarta.enterprise.concurrent.ManagedScheduledExecutorService;

/**
 * Part of every test application: stops the server when the process that launched it (the test JVM) is gone. The
 * launcher stops its server on a normal end, a failure or SIGTERM; this covers a launcher killed outright, which
 * would otherwise leave an orphaned server behind.
 */
@Singleton
@Startup
public class ParentWatchdog {
    private static final System.Logger LOG = System.getLogger(ParentWatchdog.class.getName());

    @Resource
    private ManagedScheduledExecutorService scheduler;
    private ScheduledFuture<?> check;

    @PostConstruct
    void start() {
        Optional<ProcessHandle> parent = ProcessHandle.current().parent();
        if (parent.isEmpty()) {
            LOG.log(System.Logger.Level.WARNING, "no parent process to watch: the server will not stop by itself");
            return;
        }
        ProcessHandle launcher = parent.get();
        LOG.log(System.Logger.Level.INFO, "watching launcher process {0}", launcher.pid());
        check = scheduler.scheduleWithFixedDelay(() -> {
            if (!launcher.isAlive()) {
                LOG.log(System.Logger.Level.ERROR, "the launcher process {0} is gone: halting this server",
                        launcher.pid());
                Runtime.getRuntime().halt(86);
            }
        }, 1, 1, TimeUnit.SECONDS);
    }

    @PreDestroy
    void stop() {
        if (check != null) {
            check.cancel(false);
        }
    }
}
