"""The support trial, replayed: the seventeen tasks a support person and an admin did by hand in
the console, as a script in headless Chromium against the stack scripts/browser.sh started.
Every task must complete, and no page may show a problem code, a request id, a setting's name, a
period in ISO 8601 or an id where a name belongs. Each task's page is kept as a screenshot
(trial-NN-…png); the README shows them.

    python3 support_trial.py BASE_URL SCREENSHOT_DIR ADMIN_EMAIL ADMIN_PASSWORD TOTP_SECRET
"""
import os
import sys
import time
import urllib.parse

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browsing import Browsing, totp  # noqa: E402

base, shots, admin_email, admin_password, secret = sys.argv[1:6]
browsing = Browsing(base, shots)
driver, check, wait_for = browsing.driver, browsing.check, browsing.wait_for
task_number = 0


def task(name):
    """The page a task ends on: checked in words, kept as a screenshot."""
    global task_number
    task_number += 1
    browsing.no_dialog(name)
    browsing.in_words(name)
    if name != "dashboard":  # its charts are the console's own SVG
        browsing.injected(name)
    browsing.shot("trial-%02d-%s" % (task_number, name))
    print("task %d: %s" % (task_number, name))


def main_text():
    return driver.find_element(By.TAG_NAME, "main").text


def choose(select, words, within=""):
    """Picks the option a person reads (`words`) of the select named `select` (inside the
    element `within` selects, when two forms have one), as they would."""
    options = driver.find_elements(By.CSS_SELECTOR, "%s select[name=%s] option" % (within, select))
    matching = [option for option in options if option.text == words]
    check(matching, "%s offers '%s': %r" % (select, words, [option.text for option in options]))
    if matching:
        matching[0].click()


used_step = [0]


def fresh_code():
    """The authenticator app's code of a step no earlier code used (each works once): waits for
    the clock to reach one."""
    state = os.path.join(shots, "..", "admin-totp-step")
    if os.path.exists(state) and not used_step[0]:
        used_step[0] = int(open(state).read())
    wait_for(lambda: time.time() // 30 > used_step[0], "a new step of the authenticator app", seconds=70)
    used_step[0] = int(time.time() // 30)
    return totp(secret)


try:
    # 1. Sign in with two-step sign-in: the password, then the app's code.
    driver.delete_all_cookies()
    driver.get(base + "/console/")
    driver.find_element(By.NAME, "email").send_keys(admin_email)
    driver.find_element(By.NAME, "password").send_keys(admin_password + Keys.RETURN)
    wait_for(lambda: driver.find_elements(By.NAME, "code"), "the password leads to the code")
    driver.find_element(By.NAME, "code").send_keys(fresh_code() + Keys.RETURN)
    wait_for(lambda: driver.current_url.endswith("/console/inbox"), "signed in with the code")
    task("signed-in")

    # 2. Find: the inbox says how many items there are.
    total = int(driver.find_element(By.CSS_SELECTOR, "[data-total]").get_attribute("data-total"))
    check(total >= 5, "the inbox counts its items: %d" % total)
    task("inbox")

    # 3. Filter: bugs on the iPhone, chosen by their names.
    choose("category", "Bug")
    choose("platform", "iPhone")
    driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
    wait_for(lambda: "category=bug" in driver.current_url and "platform=ios" in driver.current_url, "the filter is sent")
    kinds = {row.text for row in driver.find_elements(By.CSS_SELECTOR, "tbody tr td:nth-child(4)")}
    check(kinds == {"Bug"}, "only bugs are listed: %r" % kinds)
    task("filtered")

    # 4. Search "crash": finds "crashes" and "Crashing", and says how many.
    driver.get(base + "/console/inbox")
    search = driver.find_element(By.NAME, "q")
    search.send_keys("crash" + Keys.RETURN)
    wait_for(lambda: "q=crash" in driver.current_url, "the search is sent")
    found = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "tbody tr td:nth-child(2) a")]
    check(any("crashes" in text for text in found) and any("Crashing" in text for text in found),
          "'crash' finds 'crashes' and 'Crashing': %r" % found)
    check("%d items" % len(found) in driver.find_element(By.TAG_NAME, "h1").text, "the count is said")
    task("search-crash")

    # 5. Write a saved reply for the team, with a placeholder.
    driver.get(base + "/console/replies")
    driver.find_element(By.NAME, "title").send_keys("Crash: thanks, we are on it")
    driver.find_element(By.NAME, "body").send_keys(
        "Hi {first name}, thank you for telling us. We found the crash and a fix ships in the next update.")
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/replies'] button[type=submit]").click()
    wait_for(lambda: "Saved reply saved." in main_text(), "the saved reply is saved")
    task("saved-reply")

    # 6. Reply with it to Robin's crash: the placeholder filled, the item moves to Triaged.
    driver.get(base + "/console/inbox?q=" + urllib.parse.quote("long list"))
    driver.find_element(By.CSS_SELECTOR, "tbody tr td:nth-child(2) a").click()
    wait_for(lambda: "/console/feedback/" in driver.current_url, "the item opens")
    item_url = driver.current_url
    choose("reply", "Crash: thanks, we are on it")
    driver.find_element(By.CSS_SELECTOR, "form[data-saved-replies] button[type=submit]").click()
    wait_for(lambda: "Hi Robin," in driver.find_element(By.NAME, "message").get_attribute("value"), "the reply is filled in")
    driver.find_element(By.CSS_SELECTOR, "form[data-reply] button[type=submit]").click()
    wait_for(lambda: "Reply sent." in main_text(), "the reply is confirmed")
    check("Triaged" in driver.find_element(By.TAG_NAME, "h1").text, "the reply moved the item to Triaged")
    task("replied")

    # 7. Assign it to Sam, by name.
    choose("assignee", "Sam Support")
    driver.find_element(By.CSS_SELECTOR, "form[data-triage] button[type=submit]").click()
    wait_for(lambda: "Saved." in main_text(), "the assignment is confirmed")
    check("Assigned to: none → Sam Support" in main_text(), "the history names Sam")
    task("assigned")

    # 8. Bulk triage: every crash report selected at once, tagged and assigned to me; back to the
    #    same search, saying how many changed.
    driver.get(base + "/console/inbox?q=crash")
    driver.find_element(By.CSS_SELECTOR, "input[data-select-all]").click()
    boxes = driver.find_elements(By.CSS_SELECTOR, "input[type=checkbox][form=bulk]")
    check(boxes and all(box.is_selected() for box in boxes), "select-all selects every item shown")
    driver.find_element(By.CSS_SELECTOR, "form#bulk input[name=tags]").send_keys("crash, <img src=x onerror=alert(8)>")
    choose("assignee", "me", within="form#bulk")
    driver.find_element(By.CSS_SELECTOR, "form#bulk button[type=submit]").click()
    wait_for(lambda: "items changed." in main_text(), "the bulk action is confirmed")
    check("q=crash" in driver.current_url and driver.find_element(By.NAME, "q").get_attribute("value") == "crash",
          "the search is kept after the bulk action")
    task("bulk")

    # 9. "Mine", saved as a view and opened from the list.
    driver.get(base + "/console/inbox?assignee=mine&status=open")
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/inbox/views'] input[name=name]").send_keys(
        "My open items" + Keys.RETURN)
    wait_for(lambda: "View saved." in main_text(), "the view is saved")
    # A view named with markup stays text.
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/inbox/views'] input[name=name]").send_keys(
        '"><img src=x onerror=alert(9)>' + Keys.RETURN)
    wait_for(lambda: "View saved." in main_text(), "the hostile view is saved")
    driver.get(base + "/console/inbox")
    check('"><img src=x onerror=alert(9)>' in main_text(), "the hostile view's name is shown as text")
    driver.find_element(By.LINK_TEXT, "My open items").click()
    wait_for(lambda: "assignee=mine" in driver.current_url, "the view opens")
    check(len(driver.find_elements(By.CSS_SELECTOR, "tbody tr")) >= 2, "my items are listed")
    task("my-view")

    # 10. Find a user by last name, without its accent.
    driver.get(base + "/console/users")
    driver.find_element(By.NAME, "q").send_keys("zielinski" + Keys.RETURN)
    wait_for(lambda: "q=zielinski" in driver.current_url, "the user search is sent")
    links = driver.find_elements(By.CSS_SELECTOR, "tbody a")
    check(len(links) == 1 and "robin" in links[0].text, "Robin is found by last name: %r" % [a.text for a in links])
    task("user-found")

    # 11. Grant access.
    links[0].click()
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-email]"), "the user page opens")
    driver.find_element(By.NAME, "reason").send_keys("charged twice")
    driver.find_element(By.CSS_SELECTOR, "form[action$='/grant'] button").click()
    wait_for(lambda: "Access granted." in main_text(), "the grant is confirmed")
    task("granted")

    # 12. The audit log, filtered by the customer's address.
    driver.get(base + "/console/audit")
    driver.find_element(By.NAME, "subject").send_keys("robin.zielinski@northwind.example" + Keys.RETURN)
    wait_for(lambda: "subject=" in driver.current_url, "the audit filter is sent")
    rows = " ".join(row.text for row in driver.find_elements(By.CSS_SELECTOR, "main tbody tr"))
    check("granted a plan" in rows and "replied to a feedback item" in rows, "the log names what was done: " + rows[:300])
    task("audit")

    # 13. A price typed wrong: the message beside the field, what was typed kept.
    driver.get(base + "/console/plans")
    form = "form[action='/console/plans']"
    driver.find_element(By.CSS_SELECTOR, form + " input[name=id]").send_keys("pro-yearly")
    driver.find_element(By.CSS_SELECTOR, form + " input[name=name]").send_keys("Pro (yearly)")
    driver.find_element(By.CSS_SELECTOR, form + " input[name=price]").send_keys("59.99.9")
    driver.find_element(By.CSS_SELECTOR, form + " input[name=entitlements]").send_keys("pro")
    choose("billingPeriod", "every year")
    driver.find_element(By.CSS_SELECTOR, form + " button[type=submit]").click()
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-error-for=price]"), "the price is refused beside it")
    check(driver.find_element(By.CSS_SELECTOR, form + " input[name=name]").get_attribute("value") == "Pro (yearly)",
          "what was typed is kept")
    task("plan-refused")

    # 14. Created with "59.99".
    price = driver.find_element(By.CSS_SELECTOR, form + " input[name=price]")
    price.clear()
    price.send_keys("59.99")
    driver.find_element(By.CSS_SELECTOR, form + " button[type=submit]").click()
    wait_for(lambda: "Saved." in main_text(), "the plan is created")
    check("59.99 USD every year" in main_text(), "the plan says its price in words: " + main_text()[:300])
    task("plan-created")

    # 15. Its price changed, confirmed with the authenticator app's code (no password asked).
    check(not driver.find_elements(By.CSS_SELECTOR, "form[data-plan-form] input[name=password]"),
          "an admin with two-step sign-in is not asked for a password")
    price = driver.find_element(By.CSS_SELECTOR, "form[data-plan-form] input[name=price]")
    price.clear()
    price.send_keys("64.99")
    driver.find_element(By.CSS_SELECTOR, "form[data-plan-form] input[name=code]").send_keys(fresh_code())
    driver.find_element(By.CSS_SELECTOR, "form[data-plan-form] button[type=submit]").click()
    wait_for(lambda: "64.99 USD every year" in main_text(), "the new price is saved")
    task("price-changed")

    # 16. The dashboard counts the grant beside the App Store's subscriptions.
    driver.get(base + "/console/dashboard")
    check("granted by the team" in main_text(), "the dashboard counts grants")
    task("dashboard")

    # 17. Sign out.
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-out'] button").click()
    wait_for(lambda: "/console/sign-in" in driver.current_url, "signed out")
    browsing.shot("trial-17-signed-out")
    print("task 17: signed-out")
finally:
    browsing.quit()

if browsing.failures:
    print("support trial: %d check(s) failed" % len(browsing.failures), file=sys.stderr)
    sys.exit(1)
print("support trial: all seventeen tasks completed; screenshots in " + shots)
