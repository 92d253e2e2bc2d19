package org.leasehold.samples.ledger.app;

import jakarta.ws.rs.ApplicationPath;
import jakarta.ws.rs.core.Application;

/** The ledger's REST API, under {@code /api}. */
@ApplicationPath("/api")
public class LedgerApplication extends Application {
}
