package org.leasehold.cdi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import javax.naming.NameNotFoundException;
import javax.naming.NamingException;

import jakarta.resource.ResourceException;
import jakarta.resource.spi.ResourceAdapterInternalException;

import org.junit.jupiter.api.Test;

class FactoryLookupTest {

    @Test
    void aFactoryTheAdapterCouldNotCreateIsExplainedByTheAdaptersReason() {
        // As servers wrap it: the lookup fails with a naming exception whose causes hold the adapter's own words.
        ResourceAdapterInternalException adapter = new ResourceAdapterInternalException("the log 'orders' in /mnt/bags "
                + "is served by the embedded lease service of writer 'node-a' (...); its ownership lapses at 12:00:08Z",
                new IllegalStateException("owned elsewhere"));
        ResourceException wrapper = new ResourceException("could not create the connection factory", adapter);
        NamingException lookup = new NamingException("Lookup failed for 'java:app/leasehold/Leases'");
        lookup.initCause(new RuntimeException(wrapper));
        assertEquals(adapter.getMessage(), FactoryLookup.adapterFailure(lookup));
    }

    @Test
    void aMissingDefinitionIsNotBlamedOnTheAdapter() {
        assertNull(FactoryLookup.adapterFailure(new NameNotFoundException("leasehold/Leases not found")));
    }
}
