/**
 * The Camel glue of the {@code tokenbucket:} component: the component, endpoint, configuration, producer,
 * header constants and exceptions. Only this package imports Camel.
 */
package io.tokenbucket.camel;
