/** The build steps of the tokenbucket Camel Quarkus extension (Quarkus deployment module). */
package io.tokenbucket.camel.quarkus.deployment;
