/**
 * Broker mode ({@code example.broker}): URLs on a JMS queue shared by several instances, an embedded Artemis broker
 * or an external one ({@link io.tokenbucket.example.broker.BrokerSettings},
 * {@link io.tokenbucket.example.broker.BrokerQueue}, {@link io.tokenbucket.example.broker.EmbeddedBroker}), the
 * instance that records the results ({@link io.tokenbucket.example.broker.BrokerRecord}) and how a run feeds and
 * ends ({@link io.tokenbucket.example.broker.BrokerRun}, {@link io.tokenbucket.example.broker.BrokerWatch}).
 */
package io.tokenbucket.example.broker;
