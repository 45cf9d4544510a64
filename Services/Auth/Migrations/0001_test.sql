create table x();
