package io.etcd.jetcd.op;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.api.Compare;
import io.etcd.jetcd.options.OptionsUtil;
import io.etcd.jetcd.support.Util;

/**
 * A comparison over every key that starts with a prefix (etcd's {@code Compare.range_end}, etcd 3.3 and later), which
 * jetcd's {@link Cmp} does not expose. etcd holds it true when every key of the range satisfies it, and compares an
 * empty range as one absent key: {@code createRevision == 0} over a prefix is true exactly when no key has it.
 *
 * <p>In jetcd's package because {@link Cmp#toCompare} is package-private; it only adds the range end to what
 * {@link Cmp} builds, so a jetcd that changes {@link Cmp} breaks it at compile time, not silently.
 */
public final class RangeCmp extends Cmp {
    private final ByteSequence prefix;

    /** Compares {@code target} with every key that starts with {@code prefix}. */
    public RangeCmp(ByteSequence prefix, Cmp.Op op, CmpTarget<?> target) {
        super(prefix, op, target);
        this.prefix = prefix;
    }

    @Override
    Compare toCompare(ByteSequence namespace) {
        return super.toCompare(namespace).toBuilder()
                .setRangeEnd(Util.prefixNamespaceToRangeEnd(OptionsUtil.prefixEndOf(prefix), namespace)).build();
    }
}
