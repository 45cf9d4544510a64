-- What became of each App Store notification, for the team: applied (its signed facts recorded),
-- or ignored and why; and the ones refused (their signature or content did not verify), the
-- newest thousand kept.
ALTER TABLE subscriptions.appstore_notifications
    ADD COLUMN outcome text NOT NULL DEFAULT 'applied' CHECK (outcome IN ('applied', 'ignored')),
    ADD COLUMN reason text;
UPDATE subscriptions.appstore_notifications SET outcome = 'ignored', reason = 'the ' || notification_type || ' type changes no status'
WHERE notification_type NOT IN ('SUBSCRIBED', 'DID_RENEW', 'DID_CHANGE_RENEWAL_STATUS', 'DID_CHANGE_RENEWAL_PREF',
    'DID_FAIL_TO_RENEW', 'GRACE_PERIOD_EXPIRED', 'EXPIRED', 'REFUND', 'REFUND_REVERSED', 'REVOKE', 'RENEWAL_EXTENDED',
    'OFFER_REDEEMED', 'PRICE_INCREASE');
UPDATE subscriptions.appstore_notifications SET outcome = 'ignored', reason = 'signed for an environment this server does not serve'
WHERE environment = 'unknown';
CREATE INDEX appstore_notifications_received ON subscriptions.appstore_notifications (received_at DESC);
CREATE TABLE subscriptions.appstore_refusals (
    id bigserial PRIMARY KEY,
    received_at timestamptz NOT NULL DEFAULT now(),
    reason text NOT NULL
);
