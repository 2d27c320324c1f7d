/** The in-memory store: lock-free buckets in a concurrent map, idle buckets swept without losing a reservation. */
package io.tokenbucket.store.local;
