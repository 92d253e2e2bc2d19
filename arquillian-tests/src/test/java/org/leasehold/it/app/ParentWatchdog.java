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
 * launcher stops its server on a normal end, a failure or SIGTERM; this covers a launcher killed outright (SIGKILL,
 * an aborted build), which would otherwise leave an orphaned server behind. It starts with the application, so an
 * orphan is stopped once its boot completes.
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
        String command = launcher.info().command().orElse("");
        if (!command.isEmpty() && !command.endsWith("/java") && !command.endsWith("\\java.exe")) {
            // The test JVM launches the server directly; a parent that is no JVM means the launcher died while the
            // server was booting and the orphan was re-parented (to init or a subreaper).
            LOG.log(System.Logger.Level.ERROR, "the launcher of this server is gone (its parent is now process "
                    + launcher.pid() + ", " + command + "): halting");
            Runtime.getRuntime().halt(86);
        }
        LOG.log(System.Logger.Level.INFO, "watching launcher process " + launcher.pid() + " (this server is process "
                + ProcessHandle.current().pid() + ")");
        check = scheduler.scheduleWithFixedDelay(() -> {
            if (!launcher.isAlive()) {
                LOG.log(System.Logger.Level.ERROR, "the launcher process " + launcher.pid()
                        + " is gone: halting this server");
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
