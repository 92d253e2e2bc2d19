package org.leasehold.bag;

/**
 * A view's definition is not deterministic: a builder of a snapshot found another builder's snapshot of the same
 * boundary and version published with different bytes, although both folded the same sealed messages. The published
 * snapshot stays in place; nothing was replaced. Fix the definition's {@code apply}, {@code encode} or {@code decode}
 * (and change its version).
 */
public class ViewEncodingException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    public ViewEncodingException(String message) {
        super(message);
    }
}
