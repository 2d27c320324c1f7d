/**
 * The text users write: limits ({@code 10/1s,1000/1h}, {@code 4 in flight}), Camel durations, and the numeric
 * options, read exactly before Camel binds them; internal to the component. Knows nothing of the component.
 */
package io.tokenbucket.camel.syntax;
