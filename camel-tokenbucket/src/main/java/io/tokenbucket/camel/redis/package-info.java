/**
 * Opens the Redis store of a {@code store=redis} endpoint and watches its failures; internal to the component. The
 * only classes that load Lettuce, so that an application with local buckets alone may leave it out.
 */
package io.tokenbucket.camel.redis;
