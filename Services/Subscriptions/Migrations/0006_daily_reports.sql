-- What the dashboard's subscriptions per day read. Each subscription period (a transaction with
-- an expiry) is a step up on the day it starts and a step down on the day it ends (its expiry,
-- or its revocation), per product and kind (introductory offer or not): a level on any day is
-- the sum of the steps up to it, read from this small table whatever the years of history. A
-- trigger keeps it in the transaction that records or re-signs the period, so that a report on
-- one snapshot is exact. A step's day is the UTC day d with d < moment <= d + 1 day (the level
-- at the end of d counts it).
CREATE TABLE subscriptions.period_steps (
    day date NOT NULL,
    product_id text NOT NULL,
    trial boolean NOT NULL,
    starts integer NOT NULL DEFAULT 0,
    ends integer NOT NULL DEFAULT 0,
    PRIMARY KEY (day, product_id, trial)
);

CREATE FUNCTION subscriptions.period_ends(purchase timestamptz, expires timestamptz, revoked timestamptz)
RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN greatest(purchase, least(expires, coalesce(revoked, 'infinity')));

CREATE FUNCTION subscriptions.step_day(moment timestamptz) RETURNS date LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ((moment - interval '1 microsecond') AT TIME ZONE 'UTC')::date;

-- The old row's steps taken back, the new row's added, in one statement that locks the rows of
-- the table in key order (two periods changed at once cannot deadlock on them).
CREATE FUNCTION subscriptions.period_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH changed AS (
        SELECT o.purchase_date, o.expires_date, o.revocation_date, o.product_id, coalesce(o.offer_type = 1, false) AS trial,
            -1 AS sign
        FROM (SELECT OLD.*) AS o WHERE TG_OP <> 'INSERT' AND o.expires_date IS NOT NULL
        UNION ALL
        SELECT n.purchase_date, n.expires_date, n.revocation_date, n.product_id, coalesce(n.offer_type = 1, false), 1
        FROM (SELECT NEW.*) AS n WHERE TG_OP <> 'DELETE' AND n.expires_date IS NOT NULL
    ), steps AS (
        SELECT subscriptions.step_day(purchase_date) AS day, product_id, trial, sign AS starts, 0 AS ends FROM changed
        UNION ALL
        SELECT subscriptions.step_day(subscriptions.period_ends(purchase_date, expires_date, revocation_date)), product_id,
            trial, 0, sign
        FROM changed
    )
    INSERT INTO subscriptions.period_steps AS s (day, product_id, trial, starts, ends)
    SELECT day, product_id, trial, sum(starts), sum(ends) FROM steps
    GROUP BY 1, 2, 3 HAVING sum(starts) <> 0 OR sum(ends) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (day, product_id, trial) DO UPDATE SET starts = s.starts + excluded.starts, ends = s.ends + excluded.ends;
    RETURN NULL;
END
$$;

CREATE TRIGGER period_steps
AFTER INSERT OR DELETE OR UPDATE OF purchase_date, expires_date, revocation_date, offer_type, product_id
ON subscriptions.appstore_transactions FOR EACH ROW EXECUTE FUNCTION subscriptions.period_changed();

INSERT INTO subscriptions.period_steps (day, product_id, trial, starts, ends)
SELECT day, product_id, trial, sum(starts), sum(ends) FROM (
    SELECT subscriptions.step_day(purchase_date) AS day, product_id, coalesce(offer_type = 1, false) AS trial,
        1 AS starts, 0 AS ends
    FROM subscriptions.appstore_transactions WHERE expires_date IS NOT NULL
    UNION ALL
    SELECT subscriptions.step_day(subscriptions.period_ends(purchase_date, expires_date, revocation_date)), product_id,
        coalesce(offer_type = 1, false), 0, 1
    FROM subscriptions.appstore_transactions WHERE expires_date IS NOT NULL
) AS steps GROUP BY 1, 2, 3;

-- Today's steps, read from the periods themselves (up to now); the introductory offers that
-- ended lately (conversions); refunds; auto-renew turned off (cancellations).
CREATE INDEX appstore_transactions_purchased ON subscriptions.appstore_transactions (purchase_date);
CREATE INDEX appstore_transactions_ends
    ON subscriptions.appstore_transactions (subscriptions.period_ends(purchase_date, expires_date, revocation_date));
CREATE INDEX appstore_transactions_offers_ended ON subscriptions.appstore_transactions (expires_date)
    WHERE offer_type = 1;
CREATE INDEX appstore_transactions_revoked ON subscriptions.appstore_transactions (revocation_date)
    WHERE revocation_date IS NOT NULL;
CREATE INDEX appstore_notifications_renewal_status ON subscriptions.appstore_notifications (signed_date)
    WHERE notification_type = 'DID_CHANGE_RENEWAL_STATUS';
