package io.tokenbucket.store;

/**
 * The answer of {@link BucketStore#reserveFreest}: which candidate was chosen and what it granted.
 *
 * @param index       the position of the chosen key among the candidates
 * @param reservation the reservation made on it (or, when refused, what the freest candidate would have needed)
 */
public record Choice(int index, Reservation reservation) {
}
