-- What the dashboard's subscriptions per day read, as index ranges over the days asked for:
-- subscription periods that end after the first day (active and trials per day, from their
-- starts and ends), purchases (conversions from an introductory offer), refunds and the
-- turning off of auto-renew (cancellations).
CREATE INDEX appstore_transactions_expires ON subscriptions.appstore_transactions (expires_date);
CREATE INDEX appstore_transactions_purchased ON subscriptions.appstore_transactions (purchase_date);
CREATE INDEX appstore_transactions_revoked ON subscriptions.appstore_transactions (revocation_date)
    WHERE revocation_date IS NOT NULL;
CREATE INDEX appstore_notifications_renewal_status ON subscriptions.appstore_notifications (signed_date)
    WHERE notification_type = 'DID_CHANGE_RENEWAL_STATUS';
