/**
 * What an operator sees of an endpoint besides JMX and the dev console: its readiness check (camel-health) and its
 * Micrometer meters; internal to the component. Each is bound only when its library is present.
 */
package io.tokenbucket.camel.observe;
