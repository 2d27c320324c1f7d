/**
 * The runtime part of the tokenbucket Camel Quarkus extension: what an application runs beside the component, the
 * readiness check on Quarkus's health endpoint. The component itself comes from {@code camel-tokenbucket} and is
 * configured as {@code camel.component.tokenbucket.*} in {@code application.properties}.
 */
package io.tokenbucket.camel.quarkus;
