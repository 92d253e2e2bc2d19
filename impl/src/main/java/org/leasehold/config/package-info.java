/**
 * What the settings classes share: {@link org.leasehold.config.Check}, the range checks of every {@code *Config}, with
 * one shape of message. It depends on the JDK alone.
 */
package org.leasehold.config;
