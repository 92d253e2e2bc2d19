/**
 * Time, injected: every part reads the clock and schedules timers through a {@link org.leasehold.time.TimeSource},
 * so tests drive expiry, grace, quiet periods and skew with {@link org.leasehold.time.ManualTimeSource} instead of
 * sleeping. Signed time and witnesses arrive here too.
 */
package org.leasehold.time;
